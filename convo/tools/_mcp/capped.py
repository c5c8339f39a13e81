"""A body of an HTTP answer read with a bound on its size (``MCPServer(max_result_bytes=…)``).

The MCP SDK reads a JSON answer whole (``aread``): a server whose body never ends would grow
the worker's memory until the call's timeout. ``Capped`` wraps the body before anything of it
is read and fails once more than the limit has come. Imported with the HTTP transport only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2


class Capped(httpx2.AsyncByteStream):
    """A body that fails once more than ``limit`` bytes of it have come; ``words`` name the
    limit in the error (``connection.OVER_LIMIT``, which ``MCPServer`` recognises)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, words: str) -> None:
        self.inner, self.limit, self.words = inner, limit, words

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                # A StreamError: the SDK answers the request with an error carrying this text
                # (it closes the body), and the session goes on.
                raise httpx2.StreamError(f"the answer exceeded the {self.limit} {self.words} "
                                         "(max_result_bytes)")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
