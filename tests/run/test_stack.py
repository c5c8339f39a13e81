"""``convo._run.stack``: one method per kind of request, one dispatch, wrappers that override
only their kinds, stacked in one place; and the run's one clock (``RunState.clock``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import attrs
import pytest

from convo import Runner, ScriptedInterface
from convo._requests import AskUser, CallModel, Request, RunTools, StoreToolRun
from convo._run.driver import drive
from convo._run.stack import Answerer, Forwarding, stack
from convo.events import Event, ModelCallEnded
from convo.models import FunctionModel, MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool


@attrs.frozen
class Shout(CallModel):
    """A request class of a user's own, extending one of convo's."""


class Kinds(Answerer):
    """Says which method answered."""

    def call_model(self, request: CallModel) -> Any:
        return "call_model"

    def run_tools(self, request: RunTools) -> Any:
        return "run_tools"

    async def acall_model(self, request: CallModel) -> Any:
        return "acall_model"


def test_each_kind_is_answered_by_its_method_blocking_and_async() -> None:
    kinds = Kinds()
    assert kinds.answer(CallModel()) == "call_model"
    assert kinds.answer(Shout()) == "call_model"  # answered as the request it extends
    assert kinds.answer(RunTools(())) == "run_tools"
    assert kinds.answer(StoreToolRun((), store_as="k")) == "run_tools"
    assert asyncio.run(kinds.aanswer(CallModel())) == "acall_model"
    assert asyncio.run(kinds.aanswer(RunTools(()))) == "run_tools"  # its blocking twin


def test_a_kind_not_answered_and_a_request_of_no_kind_say_so() -> None:
    with pytest.raises(TypeError) as refused:
        Kinds().answer(AskUser("name?"))
    assert str(refused.value) == (
        "Kinds does not answer AskUser(instruction='name?', default=None)")

    class Odd(Request[int]):
        pass

    with pytest.raises(TypeError) as odd:
        Kinds().answer(Odd())
    assert str(odd.value) == "no answer for a Odd: a request must be one of convo._requests"


class Upper(Forwarding):
    """Changes one kind; the others go on to the one behind."""

    def call_model(self, request: CallModel) -> Any:
        return str(self.inner.answer(request)).upper()


class Seen(Forwarding):
    def __init__(self, inner: Any, seen: list[str], name: str) -> None:
        super().__init__(inner)
        self.seen, self.name = seen, name

    def call_model(self, request: CallModel) -> Any:
        self.seen.append(self.name)
        return self.inner.answer(request)


def test_a_wrapper_overrides_its_kinds_and_forwards_the_others() -> None:
    upper = Upper(Kinds())
    assert upper.answer(CallModel()) == "CALL_MODEL"
    assert upper.answer(RunTools(())) == "run_tools"
    assert upper.answer(StoreToolRun((), store_as="k")) == "run_tools"
    assert asyncio.run(upper.aanswer(CallModel())) == "acall_model"  # not overridden: forwarded
    with pytest.raises(TypeError, match=r"^Kinds does not answer AskUser"):
        upper.answer(AskUser())


def test_the_first_layer_of_a_stack_is_the_outermost() -> None:
    seen: list[str] = []
    answerer = stack(Kinds(), [lambda inner: Seen(inner, seen, "outer"), None,
                               lambda inner: Seen(inner, seen, "inner")])
    assert answerer.answer(CallModel()) == "call_model"
    assert seen == ["outer", "inner"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Clock:
    """A clock of its own: each reading a second later."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_run_reads_time_only_from_its_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden() -> float:
        raise AssertionError("the run read the process's clock")

    events: list[Event] = []
    runner = Runner(MockModel(["{add(a=1, b=2)}", "3"]),
                    LinearTemplate([UserTemplate("sum?"), ToolingTemplate([add])]),
                    on_event=events.append)
    clock = Clock()
    run = runner.start(clock=clock)
    monkeypatch.setattr(time, "perf_counter", forbidden)
    drive(run.driver, run.answerer)
    monkeypatch.undo()
    outcome = run.session.outcome
    assert outcome is not None and outcome.status == "completed"
    # read at the start (101), before and after each model call (102-103, 104-105), at the end
    assert [e.elapsed_s for e in events if isinstance(e, ModelCallEnded)] == [1.0, 1.0]
    assert outcome.elapsed_s == 5.0
    assert clock.now == 106.0


def test_a_resumed_run_reads_its_clock_too(monkeypatch: pytest.MonkeyPatch) -> None:
    template = LinearTemplate([UserTemplate(), ToolingTemplate([add]), UserTemplate(),
                               ToolingTemplate([add])])
    saved = Runner(FunctionModel(lambda messages, tools: "ok"), template,
                   ScriptedInterface(["a"])).run()
    runner = Runner(FunctionModel(lambda messages, tools: "again"), template,
                    ScriptedInterface(["b"]))
    run = runner.start(saved=saved, clock=Clock())
    monkeypatch.setattr(time, "perf_counter", lambda: pytest.fail("the process's clock"))
    drive(run.driver, run.answerer)
    monkeypatch.undo()
    assert [m.content for m in run.session.messages] == ["a", "ok", "b", "again"]
    assert run.session.outcome is not None
    assert run.session.outcome.elapsed_s == 2.0  # read at the start, the live call, the end
    assert run.session.outcome.model_calls == 2


def _isinstance_of_requests() -> list[str]:
    """Every ``isinstance`` test of a value against a request class in convo's code, as
    ``module:line-free function:class``."""
    import ast
    from pathlib import Path

    import convo._requests as requests

    kinds = {name for name, value in vars(requests).items()
             if isinstance(value, type) and issubclass(value, Request) and value is not Request}
    package = Path(requests.__file__).resolve().parent
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                    names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    found += [f"{path.relative_to(package).as_posix()}:{function.name}:{name}"
                              for name in sorted(names & kinds)]
    return sorted(set(found))


def test_one_dispatch_on_request_types_remains() -> None:
    # The stack's (Answerer.answer, kind) is the one dispatch; what a served conversation
    # waits for is read from it (serve/_live.py WAITS). What is left tests one class for
    # another reason: a greeting stops at asking the user, the approval route's pending
    # request for mypy, a subroutine's model calls send the child's messages. The faces and
    # branches that came after the stack brought back tests of their own (a branch's replay
    # stops at the request that made `before`'s message; the faces narrow a pending request
    # for mypy): the worklist of the next pass, pinned so that it only shrinks.
    assert _isinstance_of_requests() == [
        "_run/branch.py:aanswer:ListTools",
        "_run/branch.py:answer:ListTools",
        "_run/branch.py:reached:AskUser",
        "_run/branch.py:reached:CallModel",
        "_run/branch.py:reached:HandOff",
        "serve/_branches.py:branch:CallModel",
        "serve/_engine.py:approve:Approve",
        "serve/_engine.py:goes_on:CallModel",
        "serve/_engine.py:goes_on:RunTools",
        "serve/_engine.py:greets:AskUser",
        "serve/_engine.py:tool_results:RunTools",
        "serve/_http/agui.py:_plan:Approve",
        "serve/_http/aisdk.py:_plan:Approve",
        "serve/_live.py:client_calls:RunTools",
        "serve/_mcp_face.py:_answered:Approve",
        "serve/_mcp_face.py:_elicitable:Approve",
        "serve/_mcp_face.py:_settled:Approve",
        "templates/_subroutine.py:_drive:CallModel",
    ]
