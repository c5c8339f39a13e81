"""What the faces that name a conversation by their client's id share (AG-UI's ``threadId``,
the AI SDK's chat ``id``; API.md §24): the thread, made on its first request and owned by its
caller, and which of the messages a client sends are new.

A client of those protocols sends its whole history each time; only its user messages whose
ids the store does not hold are added, so nothing is added twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ...internal import reserved_keys
from .bodies import HTTPProblem

if TYPE_CHECKING:
    from ..live import Live
    from ..stores.base import Stored
    from .auth import Caller
    from .host import Host


class Said(Protocol):
    """A message a client sent: its id and role."""

    @property
    def id(self) -> str: ...

    @property
    def role(self) -> str: ...


async def open_thread(api: Host, caller: Caller, thread_id: str, state: dict[str, Any] | None,
                      *, fresh_ok: bool = True) -> tuple[Stored, dict[str, Any] | None]:
    """The thread's conversation if ``caller`` owns it (anybody else's: 404, an operator's
    run included: operators decide through the native API); an unknown id starts one owned by
    ``caller`` with ``state``, run to its first pause. Gives the row and, when that first
    step failed (a greeting's model call), its error body. ``fresh_ok``: whether the request
    may start a thread (a ``resume`` may not: it answers interrupts of a thread that is)."""
    store = api.engine.store
    stored = await store.load(thread_id, messages=False)
    if stored is not None and stored.owner != caller.user:
        raise HTTPProblem(404, f"no thread {thread_id!r}")
    failed = None
    if stored is None:
        if not fresh_ok:
            raise HTTPProblem(404, f"no thread {thread_id!r}: there are no interrupts to "
                                   "resume in a thread not started")
        state = dict(state or {})
        reserved = reserved_keys(state)
        if reserved:
            raise HTTPProblem(400, f'"state" may not hold {", ".join(map(repr, reserved))}: '
                                   'keys starting with "convo." and the key "_convo_state" '
                                   "are reserved for convo's own records; choose other names")
        code, body = await api.engine.create(state, None, owner=caller.user,
                                             conversation_id=thread_id)
        failed = body if code >= 400 else None
        stored = await store.load(thread_id, messages=False)
        if stored is None:  # deleted at once by another request
            raise HTTPProblem(404, f"no thread {thread_id!r}")
    return stored, failed


def unstored(live: Live, messages: Iterable[Said]) -> list[Any]:
    """The user messages of ``messages`` the conversation does not hold (by id), in order,
    each once."""
    known = {m.id for m in live.session.messages if m.id is not None}
    new = []
    for message in messages:
        if message.role == "user" and message.id not in known:
            known.add(message.id)
            new.append(message)
    return new
