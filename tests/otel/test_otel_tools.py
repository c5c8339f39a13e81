"""One ``execute_tool {name}`` span per tool call (API.md §18), each timed by its own call,
also when a batch's calls run at once under ``arun()``; read back from the in-memory
exporter: names, parents, attributes, statuses, counts and times, exactly."""

from __future__ import annotations

import asyncio
import threading
import time

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from otel_kit import Telemetry, one, shape

from convo import Message, Runner, ToolCall
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

RUN = ("invoke_agent convo", None)
CHAT = ("chat", "invoke_agent convo")
ran: dict[str, tuple[int, int]] = {}  # a tool's name -> when its body began and ended
quick_done = threading.Event()


@tool
def first(city: str) -> str:
    """The weather in a city."""
    ran["first"] = (time.time_ns(), time.time_ns())
    return f"Sunny in {city}."


@tool
def second(city: str) -> str:
    """The time in a city."""
    entered = time.time_ns()
    ran["second"] = (entered, time.time_ns())
    return f"Noon in {city}."


@tool
def broken(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no luck with {x}")


@tool
def slow(city: str) -> str:
    """A blocking tool (a worker thread under arun) that waits for ``quick`` to be over."""
    entered = time.time_ns()
    released = quick_done.wait(30)
    ran["slow"] = (entered, time.time_ns())
    return f"slow {city} {released}"


@tool
async def quick(city: str) -> str:
    """Runs on the loop; lets ``slow`` go once its own call has returned (the loop runs the
    callback after this call's run is over)."""
    entered = time.time_ns()
    asyncio.get_running_loop().call_soon(quick_done.set)
    ran["quick"] = (entered, time.time_ns())
    return f"quick {city}"


def calls(*named: tuple[str, dict[str, object]]) -> MockModel:
    """A model that asks for ``named`` calls in one batch (ids call_1, call_2, ...), then
    answers."""
    batch = tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in
                  enumerate(named, 1))
    return MockModel([Message("assistant", "", tool_calls=batch), "Done."])


def bot(*tools: object) -> LinearTemplate:
    return LinearTemplate([UserTemplate("Go."), ToolingTemplate(list(tools))])  # type: ignore[arg-type]


def tool_spans(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    found = [s for s in spans if s.name.startswith("execute_tool ")]
    by_name = {s.name.removeprefix("execute_tool "): s for s in found}
    assert len(by_name) == len(found), [s.name for s in found]
    return by_name


def times(span: ReadableSpan) -> tuple[int, int]:
    assert span.start_time is not None and span.end_time is not None
    return span.start_time, span.end_time


def test_each_call_of_a_batch_is_a_span_of_its_own_timed_by_its_own_run(
        otel: Telemetry) -> None:
    ran.clear()
    model = calls(("first", {"city": "Oslo"}), ("broken", {"x": 7}),
                  ("second", {"city": "Rome"}))
    Runner(model, bot(first, broken, second)).run()

    spans = otel.spans()
    assert shape(spans) == [RUN, CHAT, ("execute_tool first", "invoke_agent convo"),
                            ("execute_tool broken", "invoke_agent convo"),
                            ("execute_tool second", "invoke_agent convo"), CHAT]
    by_name = tool_spans(spans)
    for i, name in enumerate(["first", "broken", "second"], 1):
        span = by_name[name]
        assert span.kind is SpanKind.INTERNAL
        expected = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": f"call_{i}", "gen_ai.tool.type": "function"}
        if name == "broken":
            expected["error.type"] = "tool_error"
        assert dict(span.attributes or {}) == expected
        assert span.status.status_code is (StatusCode.ERROR if name == "broken"
                                           else StatusCode.UNSET)
        assert span.parent is not None
        assert span.parent.span_id == one(spans, "invoke_agent convo").context.span_id
    # Each span holds its own tool's body and nothing of the next call's.
    for name in ("first", "second"):
        start, end = times(by_name[name])
        assert start <= ran[name][0] <= ran[name][1] <= end
    assert times(by_name["first"])[1] <= times(by_name["broken"])[0]
    assert times(by_name["broken"])[1] <= ran["second"][0]


def test_calls_run_at_once_under_arun_each_end_their_own_span(otel: Telemetry) -> None:
    ran.clear()
    quick_done.clear()
    model = calls(("slow", {"city": "Oslo"}), ("quick", {"city": "Rome"}))
    session = asyncio.run(Runner(model, bot(slow, quick)).arun())

    assert [m.content for m in session.messages if m.role == "tool"] == [
        "slow Oslo True", "quick Rome"]
    spans = otel.spans()
    assert sorted(shape(spans)[2:4]) == [("execute_tool quick", "invoke_agent convo"),
                                         ("execute_tool slow", "invoke_agent convo")]
    assert [s.name for s in spans].count("execute_tool slow") == 1
    by_name = tool_spans(spans)
    assert len(by_name) == 2
    for name in ("slow", "quick"):
        start, end = times(by_name[name])
        assert start <= ran[name][0] <= ran[name][1] <= end
    # quick's call was over while slow still waited for it: its span ends before slow's body
    assert times(by_name["quick"])[1] <= ran["slow"][1] <= times(by_name["slow"])[1]
    # and the two overlap: both began before either ended
    assert max(times(by_name["quick"])[0], times(by_name["slow"])[0]) <= \
        min(times(by_name["quick"])[1], times(by_name["slow"])[1])


def test_a_call_no_tool_ran_for_is_a_moment_marked_error(otel: Telemetry) -> None:
    ran.clear()
    model = calls(("first", {"town": "Oslo"}), ("second", {"city": "Rome"}))
    Runner(model, bot(first, second)).run()

    by_name = tool_spans(otel.spans())
    refused = by_name["first"]
    assert "first" not in ran
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.attributes is not None
    assert refused.attributes["error.type"] == "tool_error"
    assert refused.attributes["gen_ai.tool.call.id"] == "call_1"
    start, end = times(refused)
    assert start == end <= ran["second"][0]
    assert by_name["second"].status.status_code is StatusCode.UNSET
