"""The async pools of the clients AnthropicModel and GeminiModel make check their idle
connections with one poll on the kept socket (``convo/models/_idle_checks.py``): not anyio's
attribute map per check, and still noticing a connection the server closed."""

from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
from typing import Any

import anthropic
import anyio
import pytest

from convo import AnthropicModel, GeminiModel, Message
from convo.models._gemini.model import _loop_pool
from convo.models._idle_checks import cheap_idle_checks
from convo.testing import AnthropicServer, GeminiServer

REPLY = (b'{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", '
         b'"content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn", '
         b'"usage": {"input_tokens": 3, "output_tokens": 2}}')


def test_the_sdks_async_client_takes_the_cheap_checks() -> None:
    """Pins the httpx/httpcore internals the change goes through: a release that moves them
    fails here rather than quietly bringing back the costly checks."""
    client = anthropic.AsyncAnthropic(base_url="http://127.0.0.1:9", api_key="k")
    assert cheap_idle_checks(client._client) is True
    assert cheap_idle_checks(object()) is False


def test_the_gemini_sdks_pool_for_the_loop_takes_the_cheap_checks() -> None:
    """google-genai's async httpx client sends through an inner client per event loop, never
    through its own pool: the change must reach that inner one (pins those internals)."""
    from google import genai

    async def pools() -> tuple[Any, Any]:
        client = genai.Client(api_key="k", http_options={"base_url": "http://127.0.0.1:9"}).aio
        outer = client._api_client._async_httpx_client
        inner = _loop_pool(client)
        await client.aclose()
        return outer, inner

    outer, inner = asyncio.run(pools())
    assert inner is not outer
    assert cheap_idle_checks(inner) is True


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_idle_connections_are_checked_without_anyio_attribute_lookups(
        provider: str, anthropic_server: AnthropicServer, gemini_server: GeminiServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Five calls at once on five idle connections: each request and each response's end
    checks the idle ones, and none of those checks asks anyio for the socket's attributes
    (each such lookup builds them all, a getpeername among them)."""
    lookups: list[Any] = []
    real = anyio.TypedAttributeProvider.extra

    def extra(self: Any, attribute: Any, *default: Any) -> Any:
        lookups.append(attribute)
        return real(self, attribute, *default)

    async def five(model: AnthropicModel | GeminiModel) -> list[str]:
        replies = await asyncio.gather(*(model.acomplete([Message("user", f"City {i}?")])
                                         for i in range(5)))
        return [r.text for r in replies]

    async def run() -> tuple[list[str], list[str]]:
        model: AnthropicModel | GeminiModel
        if provider == "anthropic":
            anthropic_server.add(*["Sunny."] * 10)
            model = AnthropicModel("claude-x", base_url=anthropic_server.base_url,
                                   api_key="k", max_retries=0)
        else:
            gemini_server.add(*["Sunny."] * 10)
            model = GeminiModel("gemini-x", base_url=gemini_server.base_url, api_key="k",
                                max_retries=0)
        async with model:
            first = await five(model)  # five connections, then idle in the pool
            monkeypatch.setattr(anyio.TypedAttributeProvider, "extra", extra)
            return first, await five(model)

    first, second = asyncio.run(run())
    assert (first, second, lookups) == (["Sunny."] * 5, ["Sunny."] * 5, [])


class _ClosingServer:
    """Answers one Messages API request per connection, keep-alive, then closes it."""

    def __init__(self) -> None:
        self.connections = 0
        self.closed = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.connections += 1
                conn: socket.socket = self.request
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(REPLY), REPLY))
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
                outer.closed.set()

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_a_connection_the_server_closed_is_noticed_and_not_reused() -> None:
    """With no retries, a second call on the connection the server closed would fail: the
    idle check sees the close and the pool opens a new connection instead."""
    server = _ClosingServer()

    async def run() -> list[str]:
        said = []
        async with AnthropicModel("claude-x", base_url=server.base_url, api_key="k",
                                  max_retries=0) as model:
            for city in ("Oslo", "Rome"):
                server.closed.clear()
                said.append((await model.acomplete([Message("user", f"{city}?")])).text)
                assert await asyncio.to_thread(server.closed.wait, 10)
        return said

    try:
        assert (asyncio.run(run()), server.connections) == (["Sunny.", "Sunny."], 2)
    finally:
        server.close()
