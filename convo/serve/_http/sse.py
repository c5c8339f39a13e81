"""A served turn streamed to its client: convo's own Server-Sent Events (API.md §9/§20) as one
``Encoder`` of the served events (``convo.serve._events``), and ``stream_turn``, which streams a
turn through any encoder.

Nothing is sent until the encoder has something to say, so a turn refused before it starts
(409, 400) is answered as the plain JSON error it is, not as an HTTP 200 stream with an
``error`` event. The turn runs in a task of its own: a client that leaves does not cut it
short.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse

from ...guards._marks import public
from .._events import (
    LAST,
    Encoder,
    MessageCommitted,
    ReasoningDelta,
    Retract,
    ServedEvent,
    Sink,
    TextDelta,
    TurnEnded,
    TurnFailed,
)


def _frame(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class SSEEncoder(Encoder):
    """convo's own stream: ``message`` (each committed message, ``Message.to_dict()``),
    ``delta`` and ``reasoning`` (``{"text"}``), ``retract`` (``{"message_id"}``: the deltas
    since the last ``message`` are taken back, API.md §27), then ``done`` (the conversation
    with ``added``) or ``error`` (``{"error", …}``)."""

    def message_committed(self, event: MessageCommitted) -> str:
        return _frame("message", public(event.message))

    def retract(self, event: Retract) -> str:
        return _frame("retract", {"message_id": event.message_id})

    def text_delta(self, event: TextDelta) -> str:
        return _frame("delta", {"text": event.text})

    def reasoning_delta(self, event: ReasoningDelta) -> str:
        return _frame("reasoning", {"text": event.text})

    def turn_ended(self, event: TurnEnded) -> str:
        return _frame("done", event.conversation)

    def turn_failed(self, event: TurnFailed) -> str:
        return _frame("error", event.error)


async def stream_turn(turn: Callable[[Sink], Awaitable[ServedEvent]], *,
                      tasks: set[asyncio.Task[Any]],
                      cut: Callable[[Exception], ServedEvent],
                      encoder: Encoder | None = None,
                      media_type: str = "text/event-stream",
                      headers: dict[str, str] | None = None,
                      status: int = 200) -> StreamingResponse:
    """Run ``turn`` (which emits served events and gives the last one, ``TurnEnded`` or
    ``TurnFailed``) and stream what ``encoder`` (convo's SSE by default) makes of them. An
    exception before anything was sent is raised here; after it, ``cut`` makes the event
    that ends the stream. ``headers``: the protocol's own, beside ``Cache-Control``;
    ``status``: the answer's (202 for a stream that says what it queued, API.md §26)."""
    shows = (encoder or SSEEncoder()).encode
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    started = asyncio.Event()

    def sink(event: ServedEvent) -> None:
        text = shows(event)
        if text:
            queue.put_nowait(text)
            started.set()
        if isinstance(event, LAST):
            queue.put_nowait(None)
            started.set()

    async def run() -> None:
        try:
            last = await turn(sink)
        except Exception as exc:
            if not started.is_set():
                raise  # retrieved below, and answered as JSON
            last = cut(exc)
        sink(last)

    task = asyncio.create_task(run())
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    shown = asyncio.create_task(started.wait())
    try:
        await asyncio.wait({task, shown}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        shown.cancel()
    if task.done() and not started.is_set():
        task.result()  # raises the refusal
    return StreamingResponse(_sent(queue), status_code=status, media_type=media_type,
                             headers={"Cache-Control": "no-store", **(headers or {})})


async def _sent(queue: asyncio.Queue[str | None]) -> AsyncIterator[str]:
    while True:
        text = await queue.get()
        if text is None:
            return
        yield text
