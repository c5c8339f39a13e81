"""The Template base class. Tree walks and build-time checks live in ``tree.py``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import attrs

from .._errors import DefinitionError
from .._requests import Flow, RunHooks
from .._session import Session
from ..events import HooksRan

Hook: TypeAlias = Callable[[Session], None]


def _as_hooks(value: Any) -> Any:
    if value is None:
        return ()
    if callable(value):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(value)
    return value  # the validator says what is wrong, naming the template


def _check_hooks(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, tuple) and all(callable(hook) for hook in value):
        return
    raise DefinitionError(f"{type(instance).__name__}: {attribute.name} must be a callable "
                          f"(session) -> None or a list of them, got {value!r}")


@attrs.define(slots=True, eq=False)
class Template:
    """A building block of a conversation.

    ``render(session)`` returns a generator that yields messages, events and requests (see
    ``convo._requests``) and returns the session. Templates hold no per-run state, so one
    instance may appear in many trees and many runs at once.

    ``before`` / ``after``: a callable ``(session) -> None`` or a list of them, run in order
    before the template renders and after it ends normally (not when the conversation ends
    inside it, nor on a ``BreakTemplate``). Every subclass's ``render`` runs them.
    """

    template_id: str | None = attrs.field(default=None, kw_only=True)
    before: Sequence[Hook] = attrs.field(default=(), kw_only=True, converter=_as_hooks,
                                         validator=_check_hooks)
    after: Sequence[Hook] = attrs.field(default=(), kw_only=True, converter=_as_hooks,
                                        validator=_check_hooks)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        render = cls.__dict__.get("render")
        if render is not None and not hasattr(render, "_unhooked"):
            # The plain function stays in the class too: attrs, making a slotted class,
            # repoints its ``__class__`` cell (zero-argument ``super()``) only for functions
            # it finds there.
            cls._unhooked_render = render  # type: ignore[attr-defined]
            cls.render = _hooked(render)  # type: ignore[method-assign,assignment]

    def render(self, session: Session) -> Flow:
        raise NotImplementedError(f"{type(self).__name__} must implement render()")

    def children(self) -> tuple[Template, ...]:
        """The templates this one renders (for validation and tree walks)."""
        return ()

    def label(self) -> str:
        name = type(self).__name__
        return f"{name}(template_id={self.template_id!r})" if self.template_id else name


def _hooked(render: Callable[[Any, Session], Flow]) -> Callable[[Any, Session], Flow]:
    """``render`` with the template's hooks around it (run by the most derived ``render``
    only, so a subclass calling ``super().render`` does not run them twice)."""

    @functools.wraps(render)
    def hooked(self: Template, session: Session) -> Flow:
        try:  # attribute reads, not getattr calls: this runs for every render
            before, after = self.before, self.after
        except AttributeError:
            before = after = ()
        if (not before and not after) or getattr(type(self), "render", None) is not hooked:
            return render(self, session)
        return _around(render, self, session, before, after)

    hooked._unhooked = render  # type: ignore[attr-defined]
    return hooked


def _around(render: Callable[[Any, Session], Flow], template: Template, session: Session,
            before: Sequence[Hook], after: Sequence[Hook]) -> Flow:
    if before:
        yield from _run(before, session, f"{template.label()}: before")
    # An exception (the conversation ends inside, a break, a move) skips ``after``.
    result = yield from render(template, session)
    if after:
        yield from _run(after, session, f"{template.label()}: after")
    return result


def _run(hooks: Sequence[Hook], session: Session, where: str) -> Flow:
    # A request, so that a replay does not run them again; the event has their state
    # changes recorded.
    yield RunHooks(tuple(hooks), session, where)
    yield HooksRan(where)
