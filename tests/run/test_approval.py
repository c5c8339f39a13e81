"""Approval of tool calls (API.md §10): asked before the call runs, in call order; a rejection
is the tool message the model sees; decisions are recorded and never asked again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from provider_fakes import FakeProvider

from convo import (
    Approval,
    ApprovalDecided,
    ApprovalRequested,
    Event,
    Message,
    Runner,
    ScriptedInterface,
    Session,
)
from convo._resume import resume
from convo.models import MockModel
from convo.templates import LinearTemplate, LoopGuard, ToolingTemplate, UserTemplate
from convo.tools import FinishTool, Tool, ToolArgument, tool

ran: list[str] = []


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    ran.append(order)
    return f"refunded {order}"


@tool(needs_approval=lambda args: args["amount"] > 100)
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    ran.append(f"lookup {order}")
    return f"{order}: shipped"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _turn(**kw: Any) -> LinearTemplate:
    return LinearTemplate([UserTemplate("Refund A1"),
                           ToolingTemplate([refund, pay, lookup, FinishTool()], **kw)])


def _run(replies: list[str], approvals: list[Any], mode: str = "run",
         events: list[Event] | None = None, fake: FakeProvider | None = None,
         ) -> tuple[Session, ScriptedInterface, Any]:
    """The turn on a MockModel, or on ``fake``'s provider (whose fixture checks that the
    script is used up)."""
    model = MockModel(replies) if fake is None else fake(replies)
    user = ScriptedInterface([], approvals=approvals)
    runner = Runner(model, _turn(), user, on_event=None if events is None else events.append)
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    return session, user, model


def _tools(session: Session) -> list[str]:
    return [m.content for m in session.messages if m.role == "tool"]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_an_approved_call_runs(mode: str, provider_model: FakeProvider) -> None:
    session, user, _ = _run(["{refund(order='A1')}", "Done. {finish()}"], [True], mode,
                            fake=provider_model)
    assert ran == ["A1"]
    assert _tools(session) == ["refunded A1", "Finished"]
    assert [c.name for c in user.asked_approvals] == ["refund"]
    assert session.outcome is not None and session.outcome.status == "completed"
    assert session.approvals == {"call_1": Approval(True)}


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_rejection_is_the_tool_message_and_the_model_is_called_again(mode: str) -> None:
    session, _, model = _run(["{refund(order='A1')}", "Sorry. {finish()}"], [False], mode)
    assert ran == []
    assert _tools(session) == ["Rejected by the user", "Finished"]
    assert session.messages[2].metadata == {"rejected": True}
    assert len(model.calls) == 2
    assert model.calls[1].messages[-1].content == "Rejected by the user"


def test_a_rejection_with_a_reason_tells_the_model_why() -> None:
    session, _, _ = _run(["{refund(order='A1')}", "{finish()}"],
                         [Approval(False, "order too old")])
    assert _tools(session)[0] == "Rejected by the user: order too old"


def test_text_answers_read_as_at_the_terminal() -> None:
    session, _, _ = _run(["{refund(order='A1')} {refund(order='B2')} {refund(order='C3')}",
                          "{finish()}"], ["y", "n", "not this one"])
    assert _tools(session)[:3] == ["refunded A1", "Rejected by the user",
                                   "Rejected by the user: not this one"]


def test_mixed_batch_other_calls_run_and_each_is_asked_in_call_order(
        provider_model: FakeProvider) -> None:
    events: list[Event] = []
    session, user, _ = _run(
        ["{lookup(order='A1')} {refund(order='A1')} {pay(amount=5)} {pay(amount=500)}",
         "{finish()}"], [False, True], events=events, fake=provider_model)
    assert [(c.name, c.arguments) for c in user.asked_approvals] == [
        ("refund", {"order": "A1"}), ("pay", {"amount": 500})]
    assert ran == ["lookup A1", "pay 5", "pay 500"]
    assert _tools(session)[:4] == ["A1: shipped", "Rejected by the user", "paid 5", "paid 500"]
    asked = [e for e in events if isinstance(e, ApprovalRequested | ApprovalDecided)]
    assert [(type(e).__name__, e.call.name) for e in asked] == [
        ("ApprovalRequested", "refund"), ("ApprovalDecided", "refund"),
        ("ApprovalRequested", "pay"), ("ApprovalDecided", "pay")]


def test_an_interface_without_approve_rejects() -> None:
    class NoApprove:
        def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
            return "x"

    session = Runner(MockModel(["{refund(order='A1')}", "{finish()}"]), _turn(),
                     NoApprove()).run()
    assert ran == []
    assert _tools(session)[0] == "Rejected by the user"


def test_running_out_of_approvals_stops_the_run() -> None:
    session, _, _ = _run(["{refund(order='A1')}"], [])
    assert session.outcome is not None and session.outcome.status == "stopped"
    assert ran == []


def test_a_tool_subclass_takes_needs_approval() -> None:
    class Delete(Tool):
        name = "delete"
        description = "Delete a file."
        arguments = {"path": ToolArgument("path", "the file", str)}  # noqa: RUF012

        def _execute(self, args: dict[str, Any]) -> str:
            ran.append(args["path"])
            return "deleted"

    template = LinearTemplate([UserTemplate("go"),
                               ToolingTemplate([Delete(needs_approval=True), FinishTool()])])
    session = Runner(MockModel(["{delete(path='x')}", "{finish()}"]), template,
                     ScriptedInterface([], approvals=[False])).run()
    assert ran == [] and _tools(session)[0] == "Rejected by the user"
    assert Delete().requires_approval({"path": "x"}) is False


def test_approval_inside_a_loop_guard_and_restricted_turn() -> None:
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate(
        [refund, FinishTool()], restrict_output=True, restriction_max_injections=1,
        loop_guard=LoopGuard(max_repeats=2))])
    model = MockModel(["text first", "{refund(order='A1')}", "{refund(order='A1')}"])
    session = Runner(model, template, ScriptedInterface([], approvals=[True])).run()
    # The guard ends the repeated batch before it runs: asked once, run once.
    assert ran == ["A1"]
    assert session.outcome is not None and session.outcome.turn is not None
    assert session.outcome.turn.status == "implicit_completion"
    assert _tools(session)[-1].startswith("Not run: ")


def test_a_resumed_run_never_asks_again_for_a_decided_call() -> None:
    model = MockModel(["{refund(order='A1')}", "{finish()}"])
    first = Runner(model, _turn(), ScriptedInterface([], approvals=[Approval(False, "no")])
                   ).run()
    template, session = resume(_turn(), first)
    user = ScriptedInterface([], approvals=[])
    again = Runner(MockModel([]), template, user).run(session)
    assert user.asked_approvals == []
    assert [m.content for m in again.messages] == [m.content for m in first.messages]
    assert again.outcome is not None and again.outcome.model_calls == 2


def test_a_decision_recorded_before_a_crash_is_used_when_the_call_is_asked_live() -> None:
    # The conversation was saved after the model's call, with the decision taken but the tool
    # not yet run (a crash in between): the resumed run runs the tool without asking.
    saved = Session([Message("user", "Refund A1")], approvals={"call_1": Approval(True)})
    saved.messages.append(MockModel(["{refund(order='A1')}"]).complete([]))
    template, session = resume(_turn(), saved)
    user = ScriptedInterface([], approvals=[])
    done = Runner(MockModel(["{finish()}"]), template, user).run(session)
    assert user.asked_approvals == [] and ran == ["A1"]
    assert _tools(done) == ["refunded A1", "Finished"]


def test_transcripts_record_decisions(tmp_path: Any) -> None:
    from convo._transcript import TranscriptWriter, load_transcript

    path = tmp_path / "t.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    Runner(MockModel(["{refund(order='A1')}", "{finish()}"]), _turn(),
           ScriptedInterface([], approvals=["too late"]), on_event=writer).run(session)
    writer.close()
    assert load_transcript(path).approvals == {"call_1": Approval(False, "too late")}
    assert '"type": "approval", "call_id": "call_1", "approved": false, "reason": "too late"' \
        in path.read_text()
