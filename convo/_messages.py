"""Message and ToolCall: the frozen values a conversation is made of."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal

import attrs

from . import _reply as _reply
from ._parts import Part, content_to_json, normalize, text_of
from ._reply import Finish, Usage

Role = Literal["system", "user", "assistant", "tool"]
ROLES: Final = ("system", "user", "assistant", "tool")

# One shared, read-only empty mapping: most messages carry no metadata, and an empty dict per
# message would cost 64 bytes each.
_NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})
# json.dumps(value, ensure_ascii=False), without building an encoder per call.
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False).encode


def _check_role(_: object, __: attrs.Attribute[str], value: str) -> None:
    if value not in ROLES:
        allowed = ", ".join(repr(r) for r in ROLES)
        raise ValueError(f"Message role must be one of {allowed}; got {value!r}")


def _to_tuple(value: Any) -> tuple[ToolCall, ...]:
    return value if type(value) is tuple else tuple(value)


def _to_metadata(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    # Read-only, like the rest of a frozen message.
    return MappingProxyType(dict(value)) if value else _NO_METADATA


def _to_content(value: Any, _str: type[str] = str) -> str | tuple[Part, ...]:
    # The common case first: text content stays the str it came as. (``str`` as a default
    # argument: a local, not a global, lookup; this runs for every message made.)
    if value.__class__ is _str:
        text: str = value
        return text
    return normalize(value)


# No __weakref__ slot on these two: a conversation holds many of them, and 8 bytes each add up.
@attrs.frozen(slots=True, weakref_slot=False)
class ToolCall:
    """One call of a tool, as the model asked for it.

    ``raw_arguments`` keeps the model's text when it was not a JSON object (malformed JSON, or
    a bare string such as ``{finish_task('done')}``); ``arguments`` is then empty.
    """

    id: str
    name: str
    # Dicts cannot be hashed; equal calls still hash equal (by id, name, raw text).
    arguments: dict[str, Any] = attrs.field(factory=dict, hash=False)
    raw_arguments: str | None = attrs.field(default=None, kw_only=True)

    def arguments_json(self) -> str:
        """The arguments as the wire carries them: the raw text, or the object as JSON."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return _ENCODE(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.raw_arguments is not None:
            d["raw_arguments"] = self.raw_arguments
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        return cls(
            d["id"], d["name"], dict(d.get("arguments") or {}),
            raw_arguments=d.get("raw_arguments"),
        )


# ``__init__`` written out (not attrs'): the fields' converters and the role's check inline,
# without four calls per message (a rebuild makes one per user message it replays); the same
# signature, conversions and check as the fields below declare. Its fields are set as attrs
# sets a frozen class's, through ``object.__setattr__`` bound once to the new message (a call
# of the unbound one copies its arguments again, for each field).
_BIND_SETATTR: Final = object.__setattr__.__get__
@attrs.frozen(slots=True, weakref_slot=False, init=False)
class Message:
    """One message of a conversation.

    ``role`` is ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``. An assistant message
    may carry ``tool_calls``; a tool message answers one call and carries its ``tool_call_id``.
    ``content`` is a ``str``, or a tuple of parts (``Text``, ``Image``, ``Audio``,
    ``Document``) when it carries more than text; ``text`` is its text either way.
    ``id`` is its stable id once a served conversation stored it (``None`` before).
    """

    role: Role = attrs.field(validator=_check_role)
    content: str | tuple[Part, ...] = attrs.field(default="", converter=_to_content)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), kw_only=True, converter=_to_tuple)
    tool_call_id: str | None = attrs.field(default=None, kw_only=True)
    name: str | None = attrs.field(default=None, kw_only=True)
    metadata: Mapping[str, Any] = attrs.field(
        default=_NO_METADATA, kw_only=True, converter=_to_metadata, hash=False
    )
    #: Its stable id once stored by a served conversation (the client's own id when it came
    #: from AG-UI or the AI SDK, else one the server gave it); no part of equality or hashing.
    id: str | None = attrs.field(default=None, kw_only=True, eq=False)

    def __init__(self, role: Role, content: Any = "", *,
                 tool_calls: Any = (), tool_call_id: str | None = None,
                 name: str | None = None, metadata: Mapping[str, Any] | None = _NO_METADATA,
                 id: str | None = None) -> None:
        set_ = _BIND_SETATTR(self)
        set_("role", role)
        set_("content", content if content.__class__ is str else normalize(content))
        set_("tool_calls", tool_calls if tool_calls.__class__ is tuple else tuple(tool_calls))
        set_("tool_call_id", tool_call_id)
        set_("name", name)
        set_("metadata", MappingProxyType(dict(metadata)) if metadata else _NO_METADATA)
        set_("id", id)
        if role not in ROLES and not attrs.validators.get_disabled():
            _check_role(self, _ROLE, role)

    @property
    def text(self) -> str:
        """The message's text: its ``str`` content, or its ``Text`` parts joined."""
        content = self.content
        return content if type(content) is str else text_of(content)

    # -- a reply's facts, typed (``convo._reply`` reads them from the stored metadata) ---------

    @property
    def finish(self) -> Finish | None:
        """How the reply finished (``Finish``); ``None`` when the model did not say."""
        metadata = self.metadata  # (read for every reply: no call when there is nothing)
        return _reply.finish_of(metadata) if metadata else None

    @property
    def usage(self) -> Usage | None:
        """The tokens this reply used; ``None`` when its model did not report them."""
        metadata = self.metadata
        return _reply.usage_of(metadata) if _reply.USAGE_KEY in metadata else None

    @property
    def reasoning(self) -> tuple[Mapping[str, Any], ...]:
        """The reply's reasoning items, as its provider sent them (sent back by it)."""
        return _reply.reasoning_of(self.metadata)

    @property
    def refusal(self) -> str | None:
        """What the model said when it refused (``"refused"`` when it said nothing)."""
        return _reply.refusal_of(self.metadata)

    @property
    def provider(self) -> Mapping[str, Any]:
        """The metadata that is none of the typed facts: what only the provider knows."""
        return _reply.provider_of(self.metadata)

    # -- a tool message's facts ---------------------------------------------------------------

    @property
    def error(self) -> bool:
        """Whether this tool message reports a failure (the model is told it failed)."""
        metadata = self.metadata
        return _reply.ERROR_KEY in metadata and bool(metadata[_reply.ERROR_KEY])

    @property
    def rejected(self) -> bool:
        """Whether this tool message answers a call that was not approved."""
        metadata = self.metadata
        return _reply.REJECTED_KEY in metadata and bool(metadata[_reply.REJECTED_KEY])

    @property
    def terminated(self) -> Mapping[str, Any] | None:
        """How the tool that answered here ended the turn (``TerminateResponse.saved()``)."""
        metadata = self.metadata
        return _reply.terminated_of(metadata) if _reply.TERMINATED_KEY in metadata else None

    @classmethod
    def assistant(cls, content: str | Sequence[Part] = "",
                  tool_calls: Iterable[ToolCall] = (), *, finish: Finish | str | None = None,
                  usage: Usage | None = None, reasoning: Iterable[Mapping[str, Any]] = (),
                  refusal: str | None = None, provider: Mapping[str, Any] | None = None,
                  name: str | None = None) -> Message:
        """A model's reply, its facts typed: how it finished, what it used, its reasoning
        items (sent back by its provider), a refusal, and ``provider``, whatever else its
        provider said (kept in ``metadata``, under keys of the provider's choosing)."""
        metadata = _reply.reply_metadata(finish=finish, usage=usage, reasoning=reasoning,
                                         refusal=refusal, provider=provider)
        if refusal and not content:
            content = refusal  # seen, when it is all there is
        return cls("assistant", content, tool_calls=tuple(tool_calls), name=name,
                   metadata=metadata)

    @property
    def has_parts(self) -> bool:
        """Whether the content carries more than text (an image, a sound, a file)."""
        return self.content.__class__ is tuple

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; fields at their defaults are left out."""
        content = self.content
        d: dict[str, Any] = {"role": self.role, "content": content}
        if content.__class__ is tuple:  # parts (not a property call: this runs for every
            d["content"] = content_to_json(content)  # message of every write)
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.metadata:
            d["metadata"] = dict(self.metadata)
        if self.id is not None:
            d["id"] = self.id
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        return cls(
            d["role"],
            d.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            metadata=d.get("metadata"),
            id=d.get("id"),
        )


_ROLE: Final[Any] = attrs.fields(Message).role
_FIELDS: Final = tuple(a.name for a in attrs.fields(Message))
_VALUES: Final = operator.attrgetter(*_FIELDS)


def with_id(message: Message, id: str | None) -> Message:
    """``attrs.evolve(message, id=id)`` without running the fields' converters and
    validators again (they ran when ``message`` was made): a stored conversation gives an
    id to each of its messages, and a replayed client's history may hold hundreds."""
    if type(message) is not Message:  # (a subclass may hold more)
        return attrs.evolve(message, id=id)
    new = object.__new__(Message)
    set_ = _BIND_SETATTR(new)
    for name, value in zip(_FIELDS, _VALUES(message), strict=True):  # (one call: all)
        set_(name, value)
    set_("id", id)
    return new
