"""Limits (API.md §10): checked before each model or tool call (never exceeded) and after each
reply for tokens; the run ends ``usage_limit`` with ``Outcome.limit`` naming the field."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_fakes import FakeProvider

from convo import DefinitionError, Limits, Message, Runner, ScriptedInterface
from convo._resume import resume
from convo.models import MockModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, Tool, tool

calls: list[int] = []


@tool
def step(n: int) -> str:
    """Do step n."""
    calls.append(n)
    return f"step {n} done"


@pytest.fixture(autouse=True)
def _clear() -> None:
    calls.clear()


def _chat() -> LoopTemplate:
    return LoopTemplate([UserTemplate(), ToolingTemplate([step, FinishTool()])])


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_model_calls_limit_is_never_exceeded(mode: str, provider_model: FakeProvider) -> None:
    model = provider_model(["one", "two", "three"], check_complete=False)
    runner = Runner(model, _chat(), ScriptedInterface(["a", "b", "c"]),
                    limits=Limits(model_calls=2))
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    outcome = session.outcome
    assert outcome is not None
    assert (outcome.status, outcome.limit, outcome.model_calls) == ("usage_limit",
                                                                    "model_calls", 2)
    assert provider_model.calls == 2
    assert [m.content for m in session.messages] == ["a", "one", "b", "two", "c"]
    assert outcome.describe() == ("usage_limit: the model_calls limit was reached "
                                  "(5 messages, 2 model calls)")


def test_tool_calls_past_the_limit_are_not_run_and_say_so(provider_model: FakeProvider) -> None:
    model = provider_model(["{step(n=1)} {step(n=2)} {step(n=3)}", "never"],
                           check_complete=False)
    session = Runner(model, _chat(), ScriptedInterface(["go"]),
                     limits={"tool_calls": 2}).run()
    assert calls == [1, 2]
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "step 1 done", "step 2 done", "Not run: the tool_calls limit was reached"]
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == ("usage_limit", "tool_calls")
    assert provider_model.calls == 1


def test_finish_tools_are_not_counted_and_never_blocked() -> None:
    model = MockModel(["{step(n=1)} {finish()}"])
    session = Runner(model, LinearTemplate([UserTemplate("go"),
                                            ToolingTemplate([step, FinishTool()])]),
                     limits=Limits(tool_calls=1)).run()
    assert session.outcome is not None
    assert session.outcome.status == "completed"
    assert session.outcome.turn is not None and session.outcome.turn.terminated_by == "finish"


class Lookup(Tool):
    """Pure, so a resumed run runs it again; yet the budget counts it (the two questions
    ``rerun_on_resume`` used to answer at once are asked apart)."""

    name = "lookup"
    description = "Look something up."
    rerun_on_resume = True
    free_of_limits = False  # type: ignore[assignment]

    def _execute(self, args: dict[str, Any]) -> str:
        calls.append(0)
        return "found"


def _lookups() -> LoopTemplate:
    return LoopTemplate([UserTemplate(), ToolingTemplate([Lookup(), FinishTool()])])


def test_a_tool_rerun_on_resume_may_still_count_against_the_limits() -> None:
    model = MockModel(["{lookup()} {lookup()}", "never"])
    session = Runner(model, _lookups(), ScriptedInterface(["go"]),
                     limits=Limits(tool_calls=1)).run()
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "found", "Not run: the tool_calls limit was reached"]
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == ("usage_limit", "tool_calls")


def test_a_resumed_run_counts_a_rerun_tool_as_the_live_run_did() -> None:
    first = Runner(MockModel(["{lookup()}", "Found it."]), _lookups(),
                   ScriptedInterface(["a"]), limits=Limits(tool_calls=1)).run()
    assert first.outcome is not None and first.outcome.status == "stopped"
    assert first.outcome.messages == 4
    template, session = resume(_lookups(), first)
    model = MockModel(["{lookup()}", "never"])
    again = Runner(model, template, ScriptedInterface(["b"]),
                   limits=Limits(tool_calls=1)).run(session)
    assert [m.content for m in again.messages if m.role == "tool"] == [
        "found", "Not run: the tool_calls limit was reached"]
    assert again.outcome is not None
    assert (again.outcome.status, again.outcome.limit) == ("usage_limit", "tool_calls")
    assert calls == [0, 0]  # live once, rerun once on resume; the third call was not run


@pytest.mark.parametrize(("field", "limit"), [("input_tokens", 15), ("output_tokens", 5),
                                              ("total_tokens", 20)])
def test_token_limits_end_the_run_after_the_reply_that_passed_them(field: str,
                                                                   limit: int) -> None:
    replies = [Message("assistant", f"r{i}", metadata=_usage(10, 4)) for i in range(3)]
    model = MockModel(replies)
    session = Runner(model, _chat(), ScriptedInterface(["a", "b", "c"]),
                     limits=Limits(**{field: limit})).run()
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == ("usage_limit", field)
    assert len(model.calls) == 2  # the second reply went past the limit: no third call
    assert [m.content for m in session.messages] == ["a", "r0", "b", "r1"]


def test_a_token_limit_and_a_finish_on_the_same_reply_the_finish_stands() -> None:
    reply = Message("assistant", "Done.", metadata=_usage(50, 50))
    model = MockModel([MockModel(["{step(n=1)} {finish()}"]).complete([]), reply])
    reply0 = model.replies[0]
    assert isinstance(reply0, Message)
    model.replies[0] = Message("assistant", "", tool_calls=reply0.tool_calls,
                               metadata=_usage(50, 50))
    session = Runner(model, _chat(), ScriptedInterface(["go", "more"]),
                     limits=Limits(total_tokens=10)).run()
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Not run: the total_tokens limit was reached", "Finished"]
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == ("usage_limit", "total_tokens")
    assert session.outcome.turn is not None and session.outcome.turn.terminated_by == "finish"


def test_limits_count_across_a_resume() -> None:
    first = Runner(MockModel(["one", "two"]), _chat(), ScriptedInterface(["a", "b"]),
                   limits=Limits(model_calls=3)).run()
    assert first.outcome is not None and first.outcome.status == "stopped"
    template, session = resume(_chat(), first)
    model = MockModel(["three", "four"])
    again = Runner(model, template, ScriptedInterface(["c", "d"]),
                   limits=Limits(model_calls=3)).run(session)
    assert again.outcome is not None
    assert (again.outcome.status, again.outcome.model_calls) == ("usage_limit", 3)
    assert len(model.calls) == 1


def test_wrong_limits_are_definition_errors() -> None:
    with pytest.raises(DefinitionError, match=r"Limits\(model_calls=...\) must be a whole "
                                              r"number >= 0 or None, got -1"):
        Limits(model_calls=-1)
    with pytest.raises(DefinitionError, match="Runner: unknown limit 'tokens'; the limits are "
                                              "model_calls, tool_calls"):
        Runner(None, _chat(), limits={"tokens": 3})


reply_strategy = st.sampled_from(["text", "{step(n=1)}", "{step(n=1)} {step(n=2)}",
                                  "{finish()}", "{step(n=3)} {finish()}"])


@settings(max_examples=60, deadline=None)
@given(replies=st.lists(reply_strategy, min_size=1, max_size=12),
       model_limit=st.integers(0, 6), tool_limit=st.integers(0, 6))
def test_never_more_calls_than_allowed(replies: list[str], model_limit: int,
                                       tool_limit: int) -> None:
    calls.clear()
    model = MockModel(replies, repeat_last=True)
    session = Runner(model, _chat(), ScriptedInterface(["go"] * 10),
                     limits=Limits(model_calls=model_limit, tool_calls=tool_limit)).run()
    assert len(model.calls) <= model_limit
    assert len(calls) <= tool_limit
    assert session.outcome is not None
    tool_ids = [c.id for m in session.messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in session.messages if m.role == "tool"]
    assert tool_ids == answered  # every call answered exactly once, in order
