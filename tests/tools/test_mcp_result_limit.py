"""An MCP server over Streamable HTTP whose JSON answer never ends: the call ends with an error
result naming the server and ``max_result_bytes``, having read about that much (not the
server's whole stream until the timeout), and the session goes on. The server is a raw
asyncio HTTP/1.1 server on 127.0.0.1 that speaks just enough MCP."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from convo import LinearTemplate, MCPServer, MockModel, Runner, ToolingTemplate, UserTemplate
from convo._errors import DefinitionError

LIMIT = 256 * 1024
#: What the server writes at most before it stops and waits: far over the limit, so that a
#: client without one reads it all and then waits for the rest until its timeout.
SERVER_CAP = 64 * 1024 * 1024
#: Bytes the server may get out beyond what the client read: the loopback's socket buffers.
BUFFERS = 16 * 1024 * 1024


class EndlessJSON:
    """``dump`` answers with a JSON body that does not end; ``small`` answers ``fine``."""

    def __init__(self) -> None:
        self.sent = 0  # bytes of ``dump``'s body written
        self.hung_up = threading.Event()  # the client closed ``dump``'s connection
        self.tasks: set[asyncio.Task[None]] = set()
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            while True:
                request = await reader.readline()
                if not request:
                    return
                method = request.split(b" ")[0]
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else None
                if method != b"POST":
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                elif "id" not in body:
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                elif body["method"] == "tools/call" and body["params"]["name"] == "dump":
                    await self._endless(body["id"], writer)
                    return
                else:
                    self._answer(writer, body)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()
            self.tasks.discard(task)

    def _answer(self, writer: asyncio.StreamWriter, body: dict[str, Any]) -> None:
        result: dict[str, Any]
        if body["method"] == "initialize":
            result = {"protocolVersion": body["params"]["protocolVersion"],
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "endless", "version": "1"}}
        elif body["method"] == "tools/list":
            result = {"tools": [{"name": n, "inputSchema": {"type": "object"}}
                                for n in ("dump", "small")]}
        elif body["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": "fine"}]}
        else:
            result = {}
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(data), data))

    async def _endless(self, call_id: Any, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        start = (f'{{"jsonrpc": "2.0", "id": {json.dumps(call_id)}, "result": {{"content": '
                 '[{"type": "text", "text": "').encode()
        piece = b"a" * 65536
        try:
            for chunk in (start, *(piece for _ in range(SERVER_CAP // len(piece)))):
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                self.sent += len(chunk)
            await asyncio.sleep(3600)  # the rest never comes
        except ConnectionError:
            self.hung_up.set()


@pytest.fixture
def endless() -> Iterator[EndlessJSON]:
    server = EndlessJSON()
    try:
        yield server
    finally:
        server.close()


def test_an_endless_json_answer_is_cut_at_max_result_bytes(endless: EndlessJSON) -> None:
    server = MCPServer.http(endless.url, name="endless", timeout=5, max_result_bytes=LIMIT)
    with server:
        template = LinearTemplate([UserTemplate("go"), ToolingTemplate([server])])
        model = MockModel(["{dump()}", "{small()}", "Done."])
        session = Runner(model, template).run()
    tools = [(m.text, m.metadata.get("error", False)) for m in session.messages
             if m.role == "tool"]
    assert tools == [
        ("Error: tool 'dump' failed: MCPServerError: MCP server 'endless' sent an answer to a "
         f"call of 'dump' larger than max_result_bytes ({LIMIT} bytes); it was not kept", True),
        ("fine", False)]  # the same session goes on
    assert endless.hung_up.wait(10)
    assert endless.sent < LIMIT + BUFFERS


def test_max_result_bytes_is_checked_and_read_from_a_config() -> None:
    with pytest.raises(DefinitionError, match=r"max_result_bytes must be a whole number of "
                                              r"bytes >= 1, got 0"):
        MCPServer.http("http://127.0.0.1:9/mcp", max_result_bytes=0)
    assert MCPServer.http("http://127.0.0.1:9/mcp").max_result_bytes == 4 * 1024 * 1024
    [server] = MCPServer.from_config({"mcpServers": {"a": {"url": "http://127.0.0.1:9/mcp",
                                                           "max_result_bytes": 1000}}})
    assert server.max_result_bytes == 1000
