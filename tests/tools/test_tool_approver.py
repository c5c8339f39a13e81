"""Who approves a tool's calls (API.md §19): ``approver="user"`` (the default) or
``"operator"``, on ``@tool``, ``tool(fn, …)``, a ``Tool`` subclass and a ``SubroutineTool``;
anything else is a ValueError naming the tool and the values allowed."""

from __future__ import annotations

from typing import Any

import pytest

from convo import Runner, ScriptedInterface
from convo._requests import Approve
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    SubroutineTool,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import Tool, tool


def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def test_the_default_approver_is_the_user() -> None:
    assert tool(refund).approver == "user"
    assert Tool.approver == "user"


def test_operator_on_each_way_of_making_a_tool() -> None:
    assert tool(approver="operator", needs_approval=True)(refund).approver == "operator"
    assert tool(refund, approver="operator").approver == "operator"

    class Refund(Tool):
        name = "refund"
        approver = "operator"

    assert Refund().approver == "operator"
    assert Refund(approver="user").approver == "user"
    sub = SubroutineTool(AssistantTemplate("ok"), name="ask_billing", description="Billing.",
                         needs_approval=True, approver="operator")
    assert sub.approver == "operator"


@pytest.mark.parametrize("make", [
    lambda: tool(refund, approver="staff"),
    lambda: tool(approver="admin")(refund),
    lambda: SubroutineTool(AssistantTemplate("ok"), name="refund", description="x",
                           approver="Operator"),
])
def test_an_unknown_approver_is_refused(make: Any) -> None:
    with pytest.raises(ValueError, match=r"^tool 'refund': approver must be 'user' or "
                                         r"'operator', got '(staff|admin|Operator)'$"):
        make()


def test_a_subroutine_tool_names_itself_when_refused() -> None:
    with pytest.raises(ValueError) as caught:
        SubroutineTool(AssistantTemplate("ok"), name="ask", description="x", approver="boss")
    assert str(caught.value) == "tool 'ask': approver must be 'user' or 'operator', got 'boss'"


def test_a_tool_class_with_a_wrong_approver_is_refused_where_it_is_written() -> None:
    with pytest.raises(ValueError) as caught:
        class Bad(Tool):
            name = "bad"
            approver = "manager"
    assert str(caught.value) == ("tool 'bad': approver must be 'user' or 'operator', got "
                                 "'manager'")
    with pytest.raises(ValueError, match=r"^tool 'Refund': approver must be"):
        class Refund(Tool):
            approver = None  # type: ignore[assignment]


def keep(text: str) -> str:
    """Keep a note."""
    return "noted"


def test_the_approve_request_says_who_decides_each_call(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from convo._run.answerer import LiveAnswerer

    asked: list[Approve] = []
    original = LiveAnswerer.approve

    def spy(self: LiveAnswerer, request: Approve) -> Any:
        asked.append(request)
        return original(self, request)

    monkeypatch.setattr(LiveAnswerer, "approve", spy)
    staff = tool(refund, approver="operator", needs_approval=True)
    bot = LinearTemplate([UserTemplate("go"),
                          ToolingTemplate([staff, tool(keep, needs_approval=True)])])
    model = MockModel(["{keep(text='x')} {refund(order='A1')}", "done"])
    session = Runner(model, bot, ScriptedInterface([], approvals=[True, False])).run()
    [request] = asked
    assert [c.name for c in request.calls] == ["keep", "refund"]
    assert request.approvers == ("user", "operator")
    assert [request.approver(0), request.approver(1)] == ["user", "operator"]
    assert request.needs_operator
    assert Approve(request.calls).approver(1) == "user"  # none said: the user decides
    assert not Approve(request.calls).needs_operator
    # outside serving the interface decides, whoever the approver is
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "noted", "Rejected by the user"]
