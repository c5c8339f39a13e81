"""What a model call's response said of itself beyond its message: the response's id and the
model that answered (which may be more exact than the one asked for: ``gpt-4o`` answered by
``gpt-4o-2024-08-06``). ``convo.otel`` listens for them (``gen_ai.response.id`` /
``gen_ai.response.model``) around each model call; they are not part of the reply, so a
message stays what it was in equality, records and stores.

The listener's box lives in a context variable: a model call made in a task or a worker thread
that copies the caller's context fills the same box. Nobody listening (the usual case), a
report costs one lookup.
"""

from __future__ import annotations

from contextvars import ContextVar

import attrs


@attrs.define(slots=True)
class Responded:
    """What the last response reported; ``None`` where it said nothing."""

    id: str | None = None
    model: str | None = None


_LISTENING: ContextVar[Responded | None] = ContextVar("convo_responded", default=None)


def listen() -> Responded:
    """A fresh box for the model call about to be made in this context."""
    box = Responded()
    _LISTENING.set(box)
    return box


def report(response_id: str | None, model: str | None) -> None:
    """A model read its response: say its id and model to whoever listens."""
    box = _LISTENING.get()
    if box is not None:
        box.id, box.model = response_id, model
