"""The one core (API.md §14): Runner.resume/aresume, load_transcript at the top, the
UserInterface base class, sync tools off the event loop, MessageAdded.scope, and a
subroutine's replay that keeps its approvals."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import convo
from convo import (
    Approval,
    Message,
    MessageAdded,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    ToolCall,
    UserInterface,
    load_transcript,
)
from convo._transcript import TranscriptWriter
from convo.models import MockModel
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import FinishTool, tool

CHAT = LoopTemplate([UserTemplate(), ToolingTemplate([])])


def _first_two_turns() -> Session:
    model = MockModel(["one", "two"])
    session = Runner(model, CHAT, ScriptedInterface(["a", "b"])).run()
    model.assert_complete()
    assert session.outcome is not None and session.outcome.status == RunStatus.STOPPED
    return session


def test_resume_a_session_replays_it_and_goes_on_live() -> None:
    saved = _first_two_turns()
    model = MockModel(["three"])  # only the new turn reaches the model
    user = ScriptedInterface(["c"])
    session = Runner(model, CHAT, user).resume(saved)
    model.assert_complete()
    user.assert_complete()
    assert [m.content for m in session.messages] == ["a", "one", "b", "two", "c", "three"]
    assert session.outcome is not None
    assert session.outcome.model_calls == 3  # the whole conversation's count
    assert saved.messages[-1].content == "two"  # the saved session is left as it was


def test_resume_a_transcript_by_its_path_blocking_and_async(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    Runner(MockModel(["one"]), CHAT, ScriptedInterface(["a"]), on_event=writer).run(first)
    writer.close()
    assert convo.load_transcript is load_transcript
    assert load_transcript(path).messages == first.messages
    again = Runner(MockModel(["two"]), CHAT, ScriptedInterface(["b"])).resume(path)
    assert [m.content for m in again.messages] == ["a", "one", "b", "two"]
    model = MockModel(["two"])
    later = asyncio.run(Runner(model, CHAT, ScriptedInterface(["b"])).aresume(str(path)))
    model.assert_complete()
    assert [m.content for m in later.messages] == ["a", "one", "b", "two"]


def test_resume_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match="saved must be a Session or a transcript's path, "
                                        "got int"):
        Runner(MockModel([]), CHAT).resume(3)  # type: ignore[arg-type]


class OnlyAsk(UserInterface):
    def __init__(self) -> None:
        self.threads: list[str] = []

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) > 1:
            raise EOFError
        return "hi"


def test_user_interface_defaults_ask_in_a_thread_and_reject_approvals() -> None:
    ui = OnlyAsk()
    call = ToolCall("c1", "charge", {})
    assert ui.approve(Session(), call) == Approval(False)
    assert asyncio.run(ui.aapprove(Session(), call)) == Approval(False)
    session = asyncio.run(Runner(MockModel(["hello"]), CHAT, ui).arun())
    assert [m.content for m in session.messages] == ["hi", "hello"]
    assert all(name != threading.main_thread().name for name in ui.threads)
    assert isinstance(ScriptedInterface(), UserInterface)


def test_an_object_with_ask_still_counts_as_a_user_interface() -> None:
    class Duck:
        def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
            return "quack"

    assert isinstance(Duck(), UserInterface)


def test_concurrent_conversations_run_their_sync_tools_at_once() -> None:
    # Four conversations each call a blocking tool that waits for the other three: on the
    # event loop they would wait for each other for ever (the barrier times out); in worker
    # threads all four meet.
    barrier = threading.Barrier(4, timeout=10)
    threads: list[int] = []

    @tool
    def meet() -> str:
        """Meet the others."""
        threads.append(threading.get_ident())
        barrier.wait()
        return "met"

    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([meet, FinishTool()])])

    def model() -> MockModel:
        return MockModel([Message("assistant", "", tool_calls=(ToolCall("m", "meet", {}),)),
                          Message("assistant", "", tool_calls=(ToolCall("f", "finish", {}),))])

    async def main() -> list[Session]:
        return list(await asyncio.gather(*(Runner(model(), template).arun()
                                           for _ in range(4))))

    sessions = asyncio.run(main())
    assert [next(m.content for m in s.messages if m.role == "tool") for s in sessions] == \
        ["met"] * 4
    assert len(set(threads)) == 4
    assert threading.main_thread().ident not in threads


def test_an_inline_tool_runs_on_the_loop() -> None:
    seen: list[bool] = []

    @tool(inline=True)
    def quick() -> str:
        """Quick."""
        seen.append(threading.current_thread() is threading.main_thread())
        return "ok"

    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([quick, FinishTool()])])
    model = MockModel([Message("assistant", "", tool_calls=(ToolCall("q", "quick", {}),)),
                       Message("assistant", "", tool_calls=(ToolCall("f", "finish", {}),))])
    asyncio.run(Runner(model, template).arun())
    assert seen == [True]
    assert quick.inline is True


def _subroutine_bot(charged: list[str]) -> LinearTemplate:
    @tool(needs_approval=True)
    def charge(amount: int) -> str:
        """Charge the customer."""
        charged.append(f"{amount}")
        return f"charged {amount}"

    child = SubroutineTemplate(
        LinearTemplate([UserTemplate("charge 5"), ToolingTemplate([charge, FinishTool()])]),
        inherit="none", template_id="billing")
    return LinearTemplate([UserTemplate("hello"), child, LoopTemplate([UserTemplate(),
                                                                       ToolingTemplate([])])])


def _billing_model() -> MockModel:
    return MockModel([Message("assistant", "", tool_calls=(ToolCall("c", "charge",
                                                                    {"amount": 5}),)),
                      Message("assistant", "Done, charged.",
                              tool_calls=(ToolCall("f", "finish", {}),))])


def test_a_subroutines_approved_call_is_not_asked_or_run_again_on_resume() -> None:
    charged: list[str] = []
    events: list[object] = []
    first = Runner(_billing_model(), _subroutine_bot(charged), ScriptedInterface([], ["y"]),
                   on_event=events.append).run()
    assert charged == ["5"]
    assert first.approvals == {"c": Approval(True)}
    # The child's messages are announced with their scope; the kept reply again at the top.
    scoped = [(e.scope, e.message.content) for e in events if isinstance(e, MessageAdded)]
    assert scoped[:2] == [((), "hello"), (("SubroutineTemplate(template_id='billing')",),
                                           "charge 5")]
    assert ((), "Done, charged.") in scoped
    user = ScriptedInterface(["thanks"])  # no approvals scripted: asking would stop the run
    model = MockModel(["bye"])
    again = Runner(model, _subroutine_bot(charged), user).resume(first)
    model.assert_complete()
    user.assert_complete()
    assert user.asked_approvals == []
    assert charged == ["5"]
    assert [m.content for m in again.messages][-2:] == ["thanks", "bye"]
    assert again.subroutines[0].messages == first.subroutines[0].messages
