"""Templates that add one message: fixed text, the user's answer, or a model's reply."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .._context import ContextWindow, check_window
from .._errors import DefinitionError
from .._messages import ROLES, Message, Role
from .._parts import PART_TYPES, Content, Part, PartError, from_path
from .._parts import Text as TextPart
from .._rendering import Text
from .._requests import AskUser, CallModel, Flow
from .._session import Session
from ..guards._base import AnyGuard, as_guards, check_names
from ..guards._marks import blocked
from ._base import Template
from ._guarding import (
    answered_input,
    asks,
    blocked_reply,
    checked_input,
    checked_reply,
    checks_reply,
    own,
)

if TYPE_CHECKING:
    from ..models._base import Model


def _check_role(_: object, __: attrs.Attribute[Any], value: str) -> None:
    if value not in ROLES:
        raise ValueError(f"role must be one of {', '.join(map(repr, ROLES))}; got {value!r}")


@attrs.define(slots=True, eq=False)
class MessageTemplate(Template):
    """Renders ``content`` with Jinja over ``session.state`` and appends one message."""

    content: str
    role: Role = attrs.field(validator=_check_role)
    disable_jinja: bool = attrs.field(default=False, kw_only=True)
    _text: Text = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._text = Text(self.content, self.label(), disable_jinja=self.disable_jinja)

    def render(self, session: Session) -> Flow:
        yield Message(self.role, self._text.render(session))
        return session


@attrs.define(slots=True, eq=False)
class SystemTemplate(MessageTemplate):
    """A system message."""

    role: Role = attrs.field(default="system", init=False)


UserContent = str | Sequence["str | Part | Path"]
"""A ``UserTemplate``'s content: text, or a list of text, parts and paths of files."""


def _compile_parts(content: Sequence[str | Part | Path], owner: str) -> tuple[Text | Part, ...]:
    """Text (and ``Text`` parts) compiled for Jinja, files read now: a missing or too big
    file is the author's mistake, found when the template is built."""
    out: list[Text | Part] = []
    for position, item in enumerate(content):
        if isinstance(item, str | TextPart):
            out.append(Text(item if isinstance(item, str) else item.text, owner))
        elif isinstance(item, Path):
            try:
                out.append(from_path(item))
            except (OSError, PartError) as exc:
                raise DefinitionError(f"{owner}: cannot attach {item}: {exc}") from None
        elif isinstance(item, PART_TYPES):
            out.append(item)
        else:
            raise DefinitionError(f"{owner}: content item {position + 1} must be a str, a part "
                                  f"(Text, Image, Audio, Document) or a Path; got "
                                  f"{type(item).__name__}")
    return tuple(out)


@attrs.define(slots=True, eq=False)
class UserTemplate(Template):
    """A user message: ``content`` when given, else the user interface's answer.

    ``content`` is text, or a list of text, parts (``Image``, ``Document``...) and paths of
    files to attach (read when the template is built); text is rendered with Jinja.
    ``description`` is the prompt shown to the user; ``default`` is used on empty input.
    """

    content: UserContent | None = None
    description: str | None = attrs.field(default=None, kw_only=True)
    default: str | None = attrs.field(default=None, kw_only=True)
    _text: Text | None = attrs.field(init=False, repr=False)
    _parts: tuple[Text | Part, ...] = attrs.field(init=False, repr=False, default=())
    _ask: AskUser = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._ask = AskUser(self.description, self.default)
        content = self.content
        self._text = Text(content, self.label()) if isinstance(content, str) else None
        if content is not None and not isinstance(content, str):
            self._parts = _compile_parts(content, self.label())

    def render(self, session: Session) -> Flow:
        if self._text is not None:
            message = Message("user", self._text.render(session))
        elif self._parts:
            message = Message("user", [p.render(session) if isinstance(p, Text) else p
                                       for p in self._parts])
        else:
            answer: Content = yield self._ask
            if not answer and self.default is not None:
                answer = self.default
            message = Message("user", answer)
        kinds = session._guards_on  # (``asks``, without a call: every user message)
        if kinds is None or "input" in kinds:
            yield from checked_input(message)
        else:
            yield message
        return session


@attrs.define(slots=True, eq=False)
class GenerateTemplate(Template):
    """One model call, no tools; the reply is appended with ``role``."""

    role: Role = attrs.field(default="assistant", validator=_check_role)
    model: Model | None = attrs.field(default=None, kw_only=True)

    def render(self, session: Session) -> Flow:
        if asks(session, "input") and (yield from answered_input(session, ())):
            return session
        # Only an assistant's reply is checked (``guards=None``: not held, not checked).
        speaks = self.role == "assistant"
        reply: Message = yield CallModel(self.model, guards=() if speaks else None)
        if speaks and checks_reply(session, ()):
            reply = yield from checked_reply(reply, ())
        if reply.role != self.role:
            reply = Message(self.role, reply.content, metadata=reply.metadata)
        yield reply
        if self.role == "assistant" and blocked(reply):
            yield from blocked_reply(reply)
        return session


@attrs.define(slots=True, eq=False)
class AssistantTemplate(Template):
    """A scripted assistant message (``content``), or one model call without tools.

    ``context``: a ``ContextWindow`` for that call (else the runner's applies).
    With ``output_type``, the model answers through the final-output tool and the turn's
    ``output`` is the validated object (a ``ToolingTemplate`` without other tools).
    ``guards``: this turn's own guards (``convo.guards``), after the runner's.
    """

    content: str | None = None
    model: Model | None = attrs.field(default=None, kw_only=True)
    context: ContextWindow | None = attrs.field(default=None, kw_only=True,
                                                validator=check_window)
    output_type: Any = attrs.field(default=None, kw_only=True)
    guards: tuple[AnyGuard, ...] = attrs.field(default=(), kw_only=True, converter=as_guards)
    _text: Text | None = attrs.field(init=False, repr=False)
    _typed: Template | None = attrs.field(init=False, repr=False, default=None)

    def __attrs_post_init__(self) -> None:
        self.guards = check_names(self.guards, self.label())
        self._text = None if self.content is None else Text(self.content, self.label())
        if self.output_type is not None:
            if self.content is not None:
                raise DefinitionError(f"{self.label()}: give content (a scripted message) or "
                                      "output_type (a model's typed answer), not both")
            from ._tooling import ToolingTemplate

            self._typed = ToolingTemplate([], model=self.model, output_type=self.output_type,
                                          context=self.context, guards=self.guards)

    def render(self, session: Session) -> Flow:
        if self._text is not None:
            yield Message("assistant", self._text.render(session))
            return session
        if self._typed is not None:
            return (yield from self._typed.render(session))
        guards = self.guards
        if asks(session, "input", guards) and (
                yield from answered_input(session, own(guards, "input"))):
            return session
        reply: Message = yield CallModel(self.model, context=self.context, guards=guards)
        if checks_reply(session, guards):
            reply = yield from checked_reply(reply, guards)
        yield reply
        if blocked(reply):
            yield from blocked_reply(reply)
        return session
