"""Real MCP servers for the tests, written with the ``mcp`` SDK.

``python mcp_test_servers.py KIND [PORT]``: KIND is ``tools`` (served over stdio), ``http``
(the same tools over Streamable HTTP on 127.0.0.1:PORT), ``crash_on_start`` (writes to stderr
and exits), ``hang_on_start`` (never answers ``initialize``), ``other`` (a second server whose
tool ``add`` clashes with ``tools``'s), ``grows_finish`` (a server whose tool ``add_finish``
adds a tool named ``finish`` and says its list changed), ``side_effects`` (a tool ``act`` that
notes its process id and the call id it was sent in the file ``$CONVO_TEST_DIR/calls``, then
blocks until ``$CONVO_TEST_DIR/gate`` exists; and ``call_id``, which answers with the call id),
``tasks`` (tools that declare ``execution.taskSupport``: ``research`` "required", ``quick``
"optional", ``plain`` none).
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import Callable

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"0" * 52
WAV = b"RIFF" + b"\0" * 40
PDF = b"%PDF-1.4 tiny"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def added(app: MCPServer, ctx: Context, tool: Callable[[], str], said: str) -> str:
    """Adds ``tool`` to ``app``'s tools, tells the client its list changed, and says ``said``
    (a tool's answer)."""
    app.add_tool(tool)
    await ctx.session.send_tool_list_changed()
    return said


def extra() -> str:
    """A tool added later."""
    return "extra!"


def finish() -> str:
    """The server's own finish."""
    return "the server's finish"


def build(name: str) -> MCPServer:
    app = MCPServer(name)

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @app.tool()
    def fail(why: str) -> str:
        """Always fails."""
        raise ToolError(why)

    @app.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "never"

    @app.tool()
    def die() -> str:
        """The process exits in the middle of the call."""
        sys.stderr.write("dying on purpose\n")
        sys.stderr.flush()
        os._exit(7)

    @app.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @app.tool()
    def picture() -> CallToolResult:
        """Text and an image."""
        return CallToolResult(content=[TextContent(type="text", text="a red dot"),
                                       ImageContent(type="image", data=b64(PNG),
                                                    mime_type="image/png")])

    @app.tool()
    def two_lines() -> CallToolResult:
        """Two text parts."""
        return CallToolResult(content=[TextContent(type="text", text="first"),
                                       TextContent(type="text", text="second")])

    @app.tool()
    def data_only() -> CallToolResult:
        """Structured content and no text."""
        return CallToolResult(content=[], structured_content={"temperature": 21, "unit": "C"})

    @app.tool(name="say.hello")
    def say_hello() -> str:
        """A name with a dot, which model APIs do not accept."""
        return "hello"

    @app.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool ``extra`` and says the list changed."""
        return await added(app, ctx, extra, "grown")

    @app.tool()
    def media() -> CallToolResult:
        """Audio, embedded files, a text resource and a link."""
        return CallToolResult(content=[
            TextContent(type="text", text="the files:"),
            TextContent(type="text", text="all of them"),
            AudioContent(type="audio", data=b64(WAV), mime_type="audio/wav"),
            EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///srv/report.pdf", mime_type="application/pdf", blob=b64(PDF))),
            EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///srv/shot.png", mime_type="image/png", blob=b64(PNG))),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="file:///srv/notes.txt", mime_type="text/plain", text="some notes")),
            ResourceLink(type="resource_link", name="more", uri="file:///srv/more.txt")])

    @app.tool()
    def bad_image() -> CallToolResult:
        """An image whose data is not base64."""
        return CallToolResult(content=[ImageContent(type="image", data="not base64!",
                                                    mime_type="image/png")])

    return app


def grows_finish() -> MCPServer:
    app = MCPServer("grower")

    @app.tool()
    async def add_finish(ctx: Context) -> str:
        """Adds a tool named ``finish`` and says the list changed."""
        return await added(app, ctx, finish, "added")

    return app


def side_effects() -> MCPServer:
    app = MCPServer("side-effects")
    folder = os.environ.get("CONVO_TEST_DIR", ".")

    def sent_id(ctx: Context) -> str:
        meta = ctx.request_context.meta or {}
        return str(meta.get("convo/call_id"))

    @app.tool()
    def act(ctx: Context) -> str:
        """Notes the call, then waits for the gate, blocking (as a tool stuck in a library
        call would): the server does not see its stdin end meanwhile."""
        said = sent_id(ctx)
        with open(os.path.join(folder, "calls"), "a", encoding="utf-8") as notes:
            notes.write(f"{os.getpid()} {said}\n")
        while not os.path.exists(os.path.join(folder, "gate")):
            time.sleep(0.05)
        return f"acted, call {said}"

    @app.tool()
    def call_id(ctx: Context) -> str:
        """The call id the request carried in its _meta."""
        return sent_id(ctx)

    return app


async def tasks() -> None:
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def on_list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, input_schema={"type": "object"}, execution=None if support
                       is None else types.ToolExecution(task_support=support))
            for name, support in (("research", "required"), ("quick", "optional"),
                                  ("plain", None))])

    async def on_call_tool(ctx: object, params: types.CallToolRequestParams
                           ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text",
                                                               text=f"ran {params.name}")])

    server = Server("tasks", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    kind = sys.argv[1]
    if kind == "crash_on_start":
        sys.stderr.write("cannot open the database\n")
        sys.exit(3)
    if kind == "hang_on_start":
        if os.environ.get("PIDFILE"):
            with open(os.environ["PIDFILE"], "w") as f:
                f.write(str(os.getpid()))
        time.sleep(3600)
    if kind == "http":
        build("web").run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
        return
    if kind == "grows_finish":
        grows_finish().run()
        return
    if kind == "side_effects":
        side_effects().run()
        return
    if kind == "tasks":
        anyio.run(tasks)
        return
    build("tools" if kind == "tools" else "other").run()


if __name__ == "__main__":
    main()
