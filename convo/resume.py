"""Resuming a saved conversation: the template runs again from its start, its requests
answered from the saved conversation, until the saved messages run out; then it is live.

No model, tool or user is asked again for what is saved; only tools marked
``rerun_on_resume`` (convo's own pure termination tools such as ``finish``) run again, for
their effect on the turn. Saved decisions on tool calls that needed approval are reused. If the
template takes another path than the saved conversation, the saved messages from that point
on are dropped (``CaughtUp`` says so). A served conversation is rebuilt the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from .events import CaughtUp, Event, Replayed, SubroutineStarted
from .messages import Message
from .requests import NOTHING, CallModel, Flow, RunTools, Saved
from .session import UNREPORTED, Session, SubroutineRun, Usage
from .summary import replayed_summaries
from .templates.base import Template


def _saved_of(value: Session | Saved | Sequence[Message]) -> Saved:
    if isinstance(value, Saved):
        return value
    if isinstance(value, Session):
        return Saved(tuple(value.messages), dict(value.approvals))
    return Saved(tuple(value))


def _runs(runs: Iterable[SubroutineRun]) -> tuple[SubroutineRun, ...]:
    return tuple(runs)


@attrs.define(slots=True, eq=False)
class Resume(Template):
    """Runs ``template`` with its requests answered from a saved conversation, then live.

    ``subroutines``: the saved child sessions, replayed the same way; ``quiet``: no
    ``CaughtUp`` (a child's replay, inside its parent's).
    """

    template: Template
    saved: Saved = attrs.field(converter=_saved_of)
    subroutines: tuple[SubroutineRun, ...] = attrs.field(default=(), converter=_runs)
    quiet: bool = attrs.field(default=False, kw_only=True)

    def children(self) -> tuple[Template, ...]:
        return (self.template,)

    def render(self, session: Session) -> Flow:
        # Why longer than 40 lines: the replay and the live run are two loops, so that each
        # replayed step (thousands, for a long conversation) costs as little as it can.
        flow = self.template.render(session)
        send = flow.send
        saved = Saved(self.saved.messages, self.saved.approvals)  # a cursor of this run's own
        messages = saved.messages
        runs = list(self.subroutines)
        answer: Any = None
        counted = replayed_summaries(session.state)
        if counted is not None:
            yield counted  # the summary calls the saved conversation made (convo.summary)
        try:
            while True:  # replaying: each step is checked against the saved conversation
                try:
                    step = send(answer)
                except StopIteration as stop:
                    return stop.value
                answer = None
                if isinstance(step, Message):
                    at = saved.at
                    if at < len(messages) and (step is messages[at] or _same(step, messages[at])):
                        saved.at = at + 1
                        yield step
                        continue
                elif isinstance(step, Event):
                    if runs and isinstance(step, SubroutineStarted) and \
                            runs[0].label == step.label:
                        yield step  # seen like a live start (a served conversation tracks it)
                        answer = _child_replay(runs.pop(0))
                        continue
                    answer = yield step
                    continue
                else:
                    found = step.replay(saved)
                    if found is not NOTHING:
                        yield _counted(step, found)
                        answer = found
                        continue
                if not self.quiet:
                    yield CaughtUp(saved.at, len(messages))
                answer = yield step
                break
            while True:  # live
                try:
                    step = send(answer)
                except StopIteration as stop:
                    return stop.value
                answer = yield step
        finally:
            flow.close()


_NOTHING_COUNTED: Final = Replayed()
_ONE_CALL: Final = Replayed(model_calls=1, usage=UNREPORTED)


def _counted(request: Any, answer: Any) -> Replayed:
    """What a replayed answer counts as (a resumed conversation's counts cover it all)."""
    if isinstance(request, CallModel):
        usage = answer.metadata.get("usage") if answer.metadata else None
        return Replayed(model_calls=1, usage=Usage.from_dict(usage)) if usage else _ONE_CALL
    if isinstance(request, RunTools):
        tools = sum(not inv.tool.rerun_on_resume for inv in request.invocations)
        return Replayed(tool_calls=tools) if tools else _NOTHING_COUNTED
    return _NOTHING_COUNTED


def _child_replay(run: SubroutineRun) -> Callable[[Template], Template]:
    """How a SubroutineTemplate replays its child from a saved run."""
    return lambda template: Resume(template, run.messages[run.inherited:], quiet=True)


def _same(a: Message, b: Message) -> bool:
    # Metadata (usage, timings) may differ between runs without changing the conversation.
    return (a.role, a.content, a.tool_calls, a.tool_call_id, a.name) == (
        b.role, b.content, b.tool_calls, b.tool_call_id, b.name)


def resume(template: Template, saved: Session) -> tuple[Template, Session]:
    """The template and session that continue ``saved`` (see the module docstring).

    The new session starts with ``saved``'s state and approvals and no messages; the run
    rebuilds the saved messages (and turns) as it replays them.
    """
    session = Session(state=dict(saved.state), approvals=dict(saved.approvals))
    return Resume(template, saved, saved.subroutines), session
