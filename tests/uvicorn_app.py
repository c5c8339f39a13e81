"""An ASGI app under uvicorn on a free port of 127.0.0.1, for the tests that talk to a served
app over a real socket (the serving faces, telemetry, body limits)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def uvicorn_app(app: Any, *, lifespan: str = "auto") -> Iterator[str]:
    """``app`` served by uvicorn: its base URL until the block ends, then the server stops.
    The socket is bound before the server starts, so connections queue until it is up."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
