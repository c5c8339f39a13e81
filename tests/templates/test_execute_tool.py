"""ExecuteToolTemplate (API.md §22): a tool run from the template, no model involved."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from convo import (
    DefinitionError,
    Limits,
    Message,
    RunError,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    ToolCall,
)
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    ExecuteToolTemplate,
    LinearTemplate,
    SubroutineTool,
    SystemTemplate,
    UserTemplate,
)
from convo.tools import ToolContext, tool

looked_up: list[str] = []


@tool
def look_up_order(order: str) -> dict[str, Any]:
    """Look an order up.

    Args:
        order: The order number.
    """
    looked_up.append(order)
    if order == "X":
        raise LookupError("no order X")
    return {"order": order, "status": "shipped"}


@tool
def remember(ctx: ToolContext, fact: str) -> str:
    """Remember a fact."""
    ctx.state["fact"] = fact
    return "remembered"


ORDER_TEXT = '{"order": "A1", "status": "shipped"}'


def test_it_appends_a_tool_call_and_its_result_before_the_model_sees_them() -> None:
    looked_up.clear()
    model = MockModel(["Your order has shipped."])
    template = LinearTemplate([SystemTemplate("Help."), UserTemplate("Where is A1?"),
                               ExecuteToolTemplate(look_up_order, arguments={"order": "A1"}),
                               AssistantTemplate()])
    session = Runner(model, template).run()
    call = ToolCall("call_look_up_order_2", "look_up_order", {"order": "A1"})
    assert session.messages[2:] == [
        Message("assistant", "", tool_calls=[call]),
        Message("tool", ORDER_TEXT, tool_call_id=call.id, name="look_up_order"),
        Message("assistant", "Your order has shipped.")]
    assert model.calls[0].messages == tuple(session.messages[:4])
    assert looked_up == ["A1"]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_arguments_come_from_the_state_or_a_callable() -> None:
    looked_up.clear()
    from_state = ExecuteToolTemplate(look_up_order, store_as="found")
    from_code = ExecuteToolTemplate(look_up_order,
                                    arguments=lambda s: {"order": s.state["order"] + "2"},
                                    store_as="again")
    session = Runner(MockModel([]), LinearTemplate([from_state, from_code])).run(
        Session(state={"order": "A1", "unrelated": 1}))
    assert looked_up == ["A1", "A12"]
    assert session.messages == []  # store_as adds no message
    assert session.state["found"] == {"order": "A1", "status": "shipped"}
    assert session.state["again"] == {"order": "A12", "status": "shipped"}


def test_a_tool_with_a_context_writes_the_state() -> None:
    session = Runner(MockModel([]), ExecuteToolTemplate(
        remember, arguments={"fact": "likes tea"})).run()
    assert session.state == {"fact": "likes tea"}
    assert session.messages[-1].content == "remembered"


@pytest.mark.parametrize(("arguments", "error"), [
    ({"order": 1}, "RunError: ExecuteToolTemplate(look_up_order): invalid arguments for tool "
                   "'look_up_order': "),
    (None, "RunError: ExecuteToolTemplate(look_up_order): invalid arguments for tool "
           "'look_up_order': "),
    ({"order": "X"}, "RunError: ExecuteToolTemplate(look_up_order): tool 'look_up_order' "
                     "failed: LookupError: no order X"),
    (lambda s: ["A1"], "RunError: ExecuteToolTemplate(look_up_order): arguments(session) "
                       "must return a dict, got list ['A1']"),
])
def test_errors_end_the_run_naming_the_template_and_the_tool(arguments: Any,
                                                              error: str) -> None:
    model = MockModel(["never"])
    template = LinearTemplate([ExecuteToolTemplate(look_up_order, arguments=arguments),
                               AssistantTemplate()])
    with pytest.raises(RunError, match=re.escape(error.removeprefix("RunError: "))):
        Runner(model, template).run()
    session = Runner(model, template, raise_errors=False).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.ERROR
    assert session.outcome.error is not None and session.outcome.error.startswith(error)
    assert model.calls == []
    if arguments == {"order": "X"}:  # the history stays valid: the call has its answer
        assert [m.role for m in session.messages] == ["assistant", "tool"]
        assert session.messages[1].metadata == {"error": True}
    else:
        assert session.messages == []


def test_a_tool_calls_limit_stops_it_and_ends_the_run_at_the_limit() -> None:
    looked_up.clear()
    template = LinearTemplate([ExecuteToolTemplate(look_up_order, arguments={"order": "A1"}),
                               AssistantTemplate()])
    session = Runner(MockModel(["never"]), template, limits=Limits(tool_calls=0)).run()
    assert looked_up == []
    assert session.messages[1].content == "Not run: the tool_calls limit was reached"
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == (RunStatus.USAGE_LIMIT,
                                                              "tool_calls")


@pytest.mark.parametrize("store_as", [None, "order"])
def test_a_resumed_run_does_not_run_the_tool_again(store_as: str | None) -> None:
    looked_up.clear()
    template = LinearTemplate([
        ExecuteToolTemplate(look_up_order, arguments={"order": "A1"}, store_as=store_as),
        UserTemplate(), AssistantTemplate(), UserTemplate(), AssistantTemplate()])
    first = Runner(MockModel(["Shipped."]), template, ScriptedInterface(["Where?"])).run()
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED
    model = MockModel(["Bye."])
    session = Runner(model, template, ScriptedInterface(["Thanks"])).resume(first)
    assert looked_up == ["A1"]
    assert len(model.calls) == 1
    assert session.messages[-3:] == [Message("assistant", "Shipped."), Message("user", "Thanks"),
                                     Message("assistant", "Bye.")]


def test_a_subroutine_tool_runs_its_template_inline() -> None:
    sub = SubroutineTool(AssistantTemplate(), name="summarise", description="d")
    model = MockModel(["A short summary."])
    session = Runner(model, ExecuteToolTemplate(
        sub, arguments={"input": "Summarise this."}, store_as="summary")).run()
    assert session.state == {"summary": "A short summary."}
    assert model.calls[0].messages == (Message("user", "Summarise this."),)
    assert session.subroutines[0].label == "SubroutineTool(summarise)"


def test_it_runs_under_arun() -> None:
    template = LinearTemplate([ExecuteToolTemplate(look_up_order, arguments={"order": "A1"}),
                               AssistantTemplate()])
    session = asyncio.run(Runner(MockModel(["Shipped."]), template).arun())
    assert [m.role for m in session.messages] == ["assistant", "tool", "assistant"]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"tool": "look_up"}, "ExecuteToolTemplate(?): tool is str 'look_up', expected a Tool "
                          "(a @tool function, say)"),
    ({"tool": look_up_order, "arguments": 3},
     "ExecuteToolTemplate(look_up_order): arguments must be a dict, a callable (session) -> "
     "dict or None, got 3"),
    ({"tool": look_up_order, "store_as": ""},
     "ExecuteToolTemplate(look_up_order): store_as must be a non-empty str or None, got ''"),
])
def test_bad_arguments_are_rejected_when_built(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(DefinitionError, match=f"^{re.escape(error)}$"):
        ExecuteToolTemplate(**kwargs)
