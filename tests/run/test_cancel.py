"""``convo._run.cancel``: the one cancel, which the terminal's Ctrl-C and a served turn's cancel
both use: the model call under way is cut off, its reply the text streamed so far."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from convo import LinearTemplate, Message, Runner, ToolingTemplate, UserTemplate
from convo._run.cancel import CANCELLED, Cancellable, Scope, cut
from convo._run.driver import adrive
from convo.events import Event, ModelCallEnded


class Hanging:
    """Streams some text, then waits for ever (until cancelled)."""

    def __init__(self) -> None:
        self.streamed: list[str] = []

    def complete(self, messages: Sequence[Message], tools: Any = (), *,
                 on_delta: Any = None) -> Message:
        raise AssertionError("only acomplete")

    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        assert on_delta is not None
        for text in ("Hel", "lo"):
            on_delta(text)
            self.streamed.append(text)
        await asyncio.Event().wait()
        raise AssertionError("not cut off")


BOT = LinearTemplate([UserTemplate("hi"), ToolingTemplate([])])


def test_a_cut_off_model_call_replies_with_what_was_streamed() -> None:
    scopes: list[Scope] = []
    events: list[Event] = []
    model = Hanging()
    run = Runner(model, BOT, on_event=events.append).start(
        layers=[lambda live: Cancellable(live, lambda: scopes)])

    async def main() -> None:
        driving = asyncio.ensure_future(adrive(run.driver, run.answerer))
        while len(model.streamed) < 2:  # the call is under way, in a scope of ours
            await asyncio.sleep(0)
        assert len(scopes) == 1
        cut(scopes)
        assert await driving is None

    asyncio.run(main())
    reply = run.session.messages[-1]
    assert (reply.role, reply.content, dict(reply.metadata)) == (
        "assistant", "Hello", {CANCELLED: True})
    assert scopes == []
    [ended] = [e for e in events if isinstance(e, ModelCallEnded)]  # counted as any reply
    assert ended.message is reply
    assert run.session.outcome is not None
    assert (run.session.outcome.status, run.session.outcome.model_calls) == ("completed", 1)


def test_where_nothing_can_cancel_the_call_is_made_as_it_is() -> None:
    tasks: list[Any] = []

    class Quick(Hanging):
        async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                            on_delta: Any = None) -> Message:
            tasks.append(asyncio.current_task())
            return Message("assistant", "Done.")

    run = Runner(Quick(), BOT).start(layers=[lambda live: Cancellable(live, lambda: None)])

    async def main() -> None:
        await adrive(run.driver, run.answerer)
        tasks.append(asyncio.current_task())

    asyncio.run(main())
    assert [m.content for m in run.session.messages] == ["hi", "Done."]
    assert tasks[0] is tasks[1]  # the call ran in the run's own task, none of its own


def test_the_terminal_and_serving_mark_a_cut_reply_alike() -> None:
    from convo._terminal import cancel as cancel
    from convo.serve import _turns as turns

    assert cancel.CANCELLED is CANCELLED
    assert not hasattr(turns, "CANCELLED")
