"""Cheap idle-connection checks for the async connection pools of the SDK clients convo makes.

httpcore's pool asks every idle keep-alive connection whether the server closed it (a
readable socket) each time a request starts or a response ends. On asyncio its stream finds
the socket for that through anyio, which builds the socket's whole attribute map each time (a
``getpeername`` call and an address conversion among it): about 17 µs of a 19 µs check. With
many conversations at once whose sync tools run in worker threads, a connection waits idle
while its conversation's tool runs and the other conversations' responses end, so the checks
grow as the square of the concurrency: about 200 per conversation at 200 at once, ~1.6 ms of
the client's CPU (docs/performance.md, "The 200-at-once row"). Here each connection's stream
keeps its socket from the start, and the check is the same ``poll`` on it: the pool, its
limits, TLS, proxies and socket options stay the SDK's own.

The pool is reached through httpx's and httpcore's private attributes; a release that moves
them leaves the client as the SDK made it (``cheap_idle_checks`` says whether it took), and
``tests/models/test_idle_checks.py`` fails so that it is noticed.
"""

from __future__ import annotations

import select
import sys
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2


def cheap_idle_checks(http_client: Any) -> bool:
    """Make the idle checks of ``http_client``'s pools (an ``httpx2.AsyncClient``) cheap;
    whether every pool it has took the change."""
    if not isinstance(http_client, httpx2.AsyncClient):
        return False
    transports = [getattr(http_client, "_transport", None),
                  *getattr(http_client, "_mounts", {}).values()]
    pools = [getattr(t, "_pool", None) for t in transports if t is not None]
    took = bool(pools)
    for pool in pools:
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(pool, httpcore2.AsyncConnectionPool) or backend is None:
            took = False
        elif not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)
    return took


class _Backend(httpcore2.AsyncNetworkBackend):
    """The pool's own backend, its streams keeping their sockets."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Stream(httpcore2.AsyncNetworkStream):
    """A stream whose "is_readable" polls the socket it was made with; the rest is its own."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


def _readable(sock: Any) -> bool:
    """Whether a read would not wait: data, or the end a server's close leaves (httpcore's
    own test, on the kept socket; a closed socket counts as readable, as there)."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if sys.platform == "win32" or not hasattr(select, "poll"):
        ready, _, _ = select.select([fd], [], [], 0)
        return bool(ready)
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))
