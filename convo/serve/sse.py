"""A turn answered as Server-Sent Events, once it has shown its first event (API.md §9/§20).

Until then nothing is sent, so a turn refused before it starts (409, 400) is answered as the
plain JSON error it is, not as an HTTP 200 stream with an ``error`` event. The turn runs in a
task of its own: a client that leaves does not cut it short.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse

from .live import Emit

Event = tuple[str, Any]


async def stream_turn(turn: Callable[[Emit], Awaitable[Event]], *,
                      tasks: set[asyncio.Task[Any]],
                      cut: Callable[[Exception], dict[str, Any]]) -> StreamingResponse:
    """Run ``turn`` (which emits events and gives the last one: ``done`` or ``error``) and
    stream it. An exception before the first event is raised here; after it, ``cut`` makes
    the ``error`` event that ends the stream."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    started = asyncio.Event()

    def emit(event: str, data: Any) -> None:
        queue.put_nowait((event, data))
        started.set()

    async def run() -> None:
        try:
            last = await turn(emit)
        except Exception as exc:
            if not started.is_set():
                raise  # retrieved below, and answered as JSON
            last = ("error", cut(exc))
        emit(*last)

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
    return StreamingResponse(_events(queue), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store"})


async def _events(queue: asyncio.Queue[Event]) -> AsyncIterator[str]:
    while True:
        event, data = await queue.get()
        yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
        if event in ("done", "error"):
            return
