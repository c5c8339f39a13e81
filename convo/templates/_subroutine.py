"""SubroutineTemplate: a sub-task on its own session, folded back into the conversation.

The child template runs on a session of its own, which starts with some of the parent's
messages (``inherit``); its model calls see only that session. When it ends, ``keep`` decides
what the parent gets, and the child's whole session is recorded on ``session.subroutines``
(one ``subroutine`` line in a transcript; a run that ends inside the child records it as it
stood, and a resumed run goes on inside it). See docs/states.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from .._errors import DefinitionError, ReachedEndTemplateException
from .._messages import Message
from .._requests import CallModel, ChildMessage, Flow
from .._session import Session
from ..events import Event, SubroutineEnded, SubroutineStarted, TurnEnded
from ._base import Template

if TYPE_CHECKING:
    from ..models._base import Model

INHERIT: Final = ("system", "all", "none")
KEEP: Final = ("last", "all", "none")


def _check_inherit(instance: Any, _: attrs.Attribute[Any], value: Any) -> None:
    if value in INHERIT:
        return
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return
    raise DefinitionError(f"SubroutineTemplate: inherit must be 'system', 'all', 'none' or a "
                          f"number of messages (an int >= 0), got {value!r}")


def _check_keep(instance: Any, _: attrs.Attribute[Any], value: Any) -> None:
    if value not in KEEP:
        raise DefinitionError(f"SubroutineTemplate: keep must be 'last', 'all' or 'none', "
                              f"got {value!r}")


def inherited(messages: Sequence[Message], inherit: str | int) -> list[Message]:
    """The parent's messages a child session starts with."""
    if inherit == "all":
        return list(messages)
    if inherit == "none":
        return []
    if inherit == "system":
        return [m for m in messages if m.role == "system"]
    assert isinstance(inherit, int)
    start = max(len(messages) - inherit, 0) if inherit else len(messages)
    # Never start inside a tool call's results: they would answer a call the child never saw.
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return list(messages[start:])


def kept(added: Sequence[Message], keep: str) -> list[Message]:
    """What the parent gets of the messages the child added."""
    if keep == "all":
        return list(added)
    if keep == "last":
        # The last reply with text, even one that also called a tool (``finish``, say): the
        # parent gets its text alone, since the calls' results stay in the child.
        last = [m for m in added if m.role == "assistant" and m.content]
        if not last:
            return []
        return [last[-1] if not last[-1].tool_calls else
                Message("assistant", last[-1].content, metadata=last[-1].metadata)]
    return []


@attrs.define(slots=True, eq=False)
class SubroutineTemplate(Template):
    """Runs ``template`` on its own session; ``keep`` of it is appended to the parent.

    ``inherit``: ``"system"`` (the parent's system messages), ``"all"``, ``"none"`` or the
    last N messages. ``keep``: the child's last assistant message (``"last"``), everything it
    added (``"all"``) or nothing (``"none"``). ``model``: the child's model (default: the
    runner's). The child sees the parent's ``session.state``, and its changes are kept. Ending
    the conversation inside the child (``EndTemplate``, ``end_conversation``) ends the child.
    """

    template: Template
    inherit: str | int = attrs.field(default="system", kw_only=True, validator=_check_inherit)
    keep: str = attrs.field(default="last", kw_only=True, validator=_check_keep)
    model: Model | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.template, Template):
            raise DefinitionError(f"SubroutineTemplate: template is "
                                  f"{type(self.template).__name__} {self.template!r}, "
                                  "expected a Template")

    def children(self) -> tuple[Template, ...]:
        return (self.template,)

    def render(self, session: Session) -> Flow:
        label = self.label() if self.template_id else f"SubroutineTemplate({self.template.label()})"
        start = inherited(session.messages, self.inherit)
        child = yield from child_run(label, self.template, session, start, self.model)
        yield from kept(child.messages[len(start):], self.keep)
        return session


def child_run(label: str, template: Template, session: Session, start: list[Message],
              model: Model | None, opening: Sequence[Message] = ()) -> Flow:
    """Run ``template`` on a child session that starts with ``start``, then ``opening`` (added
    by the child, as its first messages): framed by ``SubroutineStarted``/``SubroutineEnded``
    (what a replay follows), recorded on ``session.subroutines``. Returns the child session.
    Ending the conversation inside the child ends the child. ``SubroutineTemplate`` and a
    ``SubroutineTool``'s call both run their child so."""
    child = Session(start, session.state)
    # The run's guards look where they look in the child too (a model's reply is checked
    # where it comes in, as the parent's: the child's templates must not ask again).
    object.__setattr__(child, "_guards_on", session._guards_on)
    started = SubroutineStarted(label, len(session.messages), len(start), child)
    yield started  # a resumed run replays the child's saved run from here
    scope = (label,)
    try:
        for message in opening:
            yield ChildMessage(message, child, scope)
        yield from _drive(template.render(child), child, scope, model)
    except ReachedEndTemplateException:
        pass  # the child's conversation ended, not the parent's
    except GeneratorExit:  # the run was cut short: keep the record, there is no yielding
        _ended(started, session)
        raise
    except BaseException:
        yield _ended(started, session)
        raise
    yield _ended(started, session)
    return child


def _drive(flow: Flow, child: Session, scope: tuple[str, ...], model: Model | None) -> Flow:
    """Put the child's steps on its own session: its messages go up as ``ChildMessage``s (the
    runner appends them to ``child``), its model calls send ``child``'s messages (a nested
    subroutine's, its own), everything else goes up as it is."""
    answer: Any = None
    try:
        while True:
            try:
                step = flow.send(answer)
            except StopIteration:
                return
            answer = None
            if isinstance(step, Message):
                yield ChildMessage(step, child, scope)
            elif isinstance(step, ChildMessage):  # a nested subroutine's
                yield attrs.evolve(step, scope=(*scope, *step.scope))
            elif isinstance(step, CallModel):
                # A nested subroutine's call already holds its own child's messages: those
                # are what its model is sent, not this child's.
                answer = yield attrs.evolve(step, model=step.model or model,
                                            messages=tuple(child.messages)
                                            if step.messages is None else step.messages)
            elif isinstance(step, TurnEnded):  # the child's, not a turn of the parent
                child.turns.append(step.result)
            elif isinstance(step, Event):
                yield step
            else:
                answer = yield step
    finally:
        flow.close()


def _ended(started: SubroutineStarted, session: Session) -> SubroutineEnded:
    child = started.child
    if child is not None and child.state != session.state:
        session.state.clear()
        session.state.update(child.state)
    record = started.record()
    session.subroutines.append(record)
    return SubroutineEnded(record)
