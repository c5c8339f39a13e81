"""A quiet replay (what a served rebuild uses): the listeners hear only the replay's frame
(ReplayStarted, the subroutines, CaughtUp), no event for what it rebuilds, and every event once
it is live, exactly as a loud replay delivers them from there on."""

from __future__ import annotations

import asyncio
from typing import Any

from convo import Approval, Message, MessageAdded, Runner, ScriptedInterface, Session, ToolCall
from convo._run.driver import adrive, drive
from convo._run.replay import Replay
from convo.events import (
    CaughtUp,
    Event,
    ReplayStarted,
    RunEnded,
    SubroutineEnded,
    SubroutineStarted,
)
from convo.models import MockModel
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import FinishTool, tool


@tool(needs_approval=True)
def charge(amount: int) -> str:
    """Charge the customer."""
    return f"charged {amount}"


BOT = LinearTemplate([
    UserTemplate("hello"),
    SubroutineTemplate(LinearTemplate([UserTemplate("charge 5"),
                                       ToolingTemplate([charge, FinishTool()])]),
                       inherit="none", template_id="billing"),
    LoopTemplate([UserTemplate(), ToolingTemplate([])]),
])


def _saved() -> Session:
    model = MockModel([Message("assistant", "", tool_calls=(ToolCall("c", "charge",
                                                                    {"amount": 5}),)),
                       Message("assistant", "Done.", tool_calls=(ToolCall("f", "finish", {}),)),
                       "first answer"])
    saved = Runner(model, BOT, ScriptedInterface(["first"], ["y"])).run()
    model.assert_complete()
    assert saved.approvals == {"c": Approval(True)}
    return saved


def _resume(saved: Session, *, quiet: bool, run_async: bool = False
            ) -> tuple[Session, list[Event]]:
    heard: list[Event] = []
    runner = Runner(MockModel(["second answer"]), BOT, ScriptedInterface(["second"]),
                    on_event=heard.append)
    run = runner.start(saved=saved)
    assert isinstance(run.answerer, Replay)
    if quiet:
        run.answerer.quiet()
    if run_async:
        asyncio.run(adrive(run.driver, run.answerer))
    else:
        drive(run.driver, run.answerer)
    return run.session, heard


def _names(events: list[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_a_quiet_replay_is_heard_only_as_its_frame_then_every_live_event() -> None:
    saved = _saved()
    loud_session, loud = _resume(saved, quiet=False)
    session, quiet = _resume(saved, quiet=True)
    assert session.messages == loud_session.messages
    assert [m.content for m in session.messages][-2:] == ["second", "second answer"]
    assert session.subroutines == loud_session.subroutines == saved.subroutines
    caught_up = _names(quiet).index("CaughtUp")
    assert _names(quiet)[:caught_up + 1] == ["ReplayStarted", "SubroutineStarted",
                                             "SubroutineEnded", "CaughtUp"]
    assert quiet[0] == ReplayStarted(len(saved.messages))
    assert quiet[caught_up] == CaughtUp(len(saved.messages), len(saved.messages))
    # from CaughtUp on, the very events a loud replay delivers, all of them
    loud_from = _names(loud).index("CaughtUp")
    assert _names(quiet)[caught_up:] == _names(loud)[loud_from:]
    assert len(quiet) - caught_up == len(loud) - loud_from
    live = quiet[caught_up + 1:]
    added = [e.message.content for e in live if isinstance(e, MessageAdded)]
    assert added == ["second", "second answer"]
    assert isinstance(quiet[-1], RunEnded)
    assert sum(isinstance(e, RunEnded) for e in quiet) == 1
    # what the loud replay said of the rebuilt part, the quiet one did not make at all
    assert sum(isinstance(e, MessageAdded) for e in loud) > len(added)


def test_a_quiet_replay_on_the_loop_delivers_the_same() -> None:
    saved = _saved()
    _, blocking = _resume(saved, quiet=True)
    session, on_loop = _resume(saved, quiet=True, run_async=True)
    assert _names(on_loop) == _names(blocking)
    assert session.outcome is not None and session.outcome.model_calls == 4


def test_a_run_that_ends_inside_a_quiet_replay_still_says_how_it_ended() -> None:
    done = LinearTemplate([UserTemplate("hi"), ToolingTemplate([])])
    saved = Runner(MockModel(["hello"]), done).run()
    heard: list[Any] = []
    run = Runner(MockModel([]), done, on_event=heard.append).start(saved=saved)
    run.answerer.quiet()
    drive(run.driver, run.answerer)
    assert _names(heard) == ["ReplayStarted", "RunEnded"]
    assert run.session.messages == saved.messages
    assert run.session.outcome is not None
    assert run.session.outcome.status == saved.outcome.status  # type: ignore[union-attr]
    assert heard[-1].outcome == run.session.outcome


def test_a_listener_attached_before_the_quiet_replay_goes_live_hears_the_subroutines() -> None:
    saved = _saved()
    late: list[Event] = []
    runner = Runner(MockModel(["second answer"]), BOT, ScriptedInterface(["second"]))
    run = runner.start(saved=saved)
    run.answerer.quiet()
    run.state.listen(late.append)  # as a served conversation attaches its recorder
    drive(run.driver, run.answerer)
    frame = [e for e in late if isinstance(e, SubroutineStarted | SubroutineEnded)]
    assert [type(e).__name__ for e in frame] == ["SubroutineStarted", "SubroutineEnded"]
    assert _names(late)[:4] == ["ReplayStarted", "SubroutineStarted", "SubroutineEnded",
                                "CaughtUp"]
    assert sum(isinstance(e, MessageAdded) for e in late) == 2
