"""A tiny HTTP server for tests that answers every request with exactly the bytes it is given.

``convo.testing.OpenAIServer`` always speaks well-formed HTTP and mostly well-formed Chat
Completions; this one sends whatever a test scripts — any body, any SSE chunks, any split into
pieces, a keep-alive comment forever — so that what a broken or hostile server can do to the
client is tested through the real SDK. Standard library only; one thread per connection; every
response closes its connection.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs


@attrs.frozen
class Raw:
    """One response: ``pieces`` sent one by one (each as one HTTP chunk when ``chunked``),
    ``interval_s`` apart. ``pieces`` may be an endless iterator (a slow drip)."""

    pieces: Iterable[bytes] = ()
    status: int = 200
    content_type: str = "application/json"
    chunked: bool = False
    interval_s: float = 0.0


def sse(*events: bytes, done: bool = True) -> bytes:
    """SSE bytes: each event as ``data: ...`` and a blank line (then ``[DONE]``)."""
    body = b"".join(b"data: " + event + b"\n\n" for event in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


class RawServer:
    """Answers every request with ``self.reply`` (a ``Raw``, or a function giving one)."""

    def __init__(self, reply: Raw | Callable[[], Raw] = Raw()) -> None:
        self.reply = reply
        self.requests = 0
        self._stopping = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._handle(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler,
                                                       bind_and_activate=False)
        self._server.daemon_threads = True
        self._server.allow_reuse_address = True
        self._server.server_bind()
        self._server.server_activate()
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _handle(self, conn: socket.socket) -> None:
        _read_request(conn)
        self.requests += 1
        reply = self.reply() if callable(self.reply) else self.reply
        head = [f"HTTP/1.1 {reply.status} X", f"Content-Type: {reply.content_type}",
                "Connection: close"]
        pieces: Iterator[bytes] = iter(reply.pieces)
        if reply.chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            body = b"".join(pieces)
            head.append(f"Content-Length: {len(body)}")
            pieces = iter([body[i:i + 7] for i in range(0, len(body), 7)] if
                          reply.interval_s else [body])
        try:
            conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for piece in pieces:
                if self._stopping.is_set():
                    return
                if not piece:
                    continue
                if reply.chunked:
                    piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                conn.sendall(piece)
                if reply.interval_s:
                    time.sleep(reply.interval_s)
            if reply.chunked:
                conn.sendall(b"0\r\n\r\n")
        except OSError:
            return  # the client hung up (a deadline passed): nothing more to send

    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return
        body += more
