"""An ``MCPServer`` in a ``ToolingTemplate``'s tool list (API §17), against real MCP servers:
under run() and arun(), listed once per process, a clash raised before any model call, a server
down at listing time, resume and served rebuilds that never call a tool again (also with the
server down while they replay), and ``Runner.close()``."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp_kit import HttpServer, stdio_server
from starlette.testclient import TestClient
from toolset_kit import Between, ran, tool_messages

from convo import MCPServer, Message, Runner, ScriptedInterface, Session, ToolDefinitionError
from convo._record.transcript import TranscriptWriter
from convo.models import FunctionModel, MockModel
from convo.serve import create_app
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.testing import FakeMCPServer, MCPCall
from convo.tools import tool
from convo.tools._mcp.connection import Connection


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_server_in_the_tool_list_beside_a_tool(tools_server: MCPServer, mode: str) -> None:
    @tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    model = MockModel(["{add(a=2, b=3)}{shout(text='hi')}{echo(text='x')}", "Done."])
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([tools_server, shout])])
    session = ran(Runner(model, template), mode)
    assert tool_messages(session) == [("5", False), ("HI", False), ("x", False)]
    assert model.calls[0].tool_names == (
        "add", "echo", "fail", "hang", "die", "pid", "picture", "two_lines", "data_only",
        "say_hello", "grow", "media", "bad_image", "shout")
    model.assert_complete()


def test_a_server_is_listed_once_per_process_not_per_turn(
        tools_server: MCPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    listings: list[int] = []
    original = Connection.list_tools

    async def counted(self: Connection) -> list[Any]:
        listings.append(1)
        return await original(self)

    monkeypatch.setattr(Connection, "list_tools", counted)
    template = LoopTemplate([UserTemplate(), ToolingTemplate([tools_server])])
    for mode in ("run", "arun"):
        model = MockModel(["{add(a=1, b=1)}", "2.", "Hello.", "Bye."])
        runner = Runner(model, template, ScriptedInterface(["1+1?", "hi", "bye"]))
        session = ran(runner, mode)
        assert tool_messages(session) == [("2", False)]
    assert len(listings) == 1


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_clash_of_two_servers_is_raised_before_any_model_call(mode: str) -> None:
    with stdio_server("tools", timeout=20) as one, stdio_server("other", timeout=20) as two:
        model = MockModel(["never"])
        template = LinearTemplate([UserTemplate("go"), ToolingTemplate([one, two])])
        with pytest.raises(ToolDefinitionError) as info:
            ran(Runner(model, template), mode)
        assert str(info.value) == (
            "ToolingTemplate: two tools of the turn are named 'add': <MCPTool 'add' of MCP "
            "server 'tools'> (listed by 'tools', tools[0]) and <MCPTool 'add' of MCP server "
            "'other'> (listed by 'other', tools[1])")
        assert model.calls == []
        renamed = stdio_server("other", prefix="b_", timeout=20)
        fine = LinearTemplate([UserTemplate("go"), ToolingTemplate([one, renamed])])
        session = Runner(MockModel(["{b_add(a=1, b=2)}", "3."]), fine).run()
        renamed.close()
    assert tool_messages(session) == [("3", False)]


def test_a_server_that_cannot_start_leaves_the_turn_without_its_tools() -> None:
    @tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    broken = stdio_server("crash_on_start", name="db", timeout=20)
    model = MockModel(["{query(sql='select 1')}{shout(text='on')}", "Without the database."])
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([broken, shout])])
    session = Runner(model, template).run()
    assert tool_messages(session) == [
        ("Error: there is no tool named 'query'; available tools: shout; the tools of 'db' "
         "could not be listed: MCPServerError: MCP server 'db' could not start: MCPError: "
         "Connection closed; its stderr ends: 'cannot open the database'", True),
        ("ON", False)]
    assert model.calls[0].tool_names == ("shout",)
    assert session.outcome is not None and session.outcome.status == "completed"


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_server_down_at_listing_is_tried_again_next_turn(http_server: HttpServer,
                                                           mode: str) -> None:
    http_server.stop()
    with MCPServer.http(http_server.url, name="web", timeout=10) as server:
        model = MockModel(["{add(a=1, b=1)}", "It is down.", "{add(a=2, b=2)}", "4."])
        template = LoopTemplate([UserTemplate(), ToolingTemplate([server])])
        runner = Runner(model, template, Between(["1+1?", "2+2?"], http_server.start))
        session = ran(runner, mode)
    assert tool_messages(session) == [
        ("Error: there is no tool named 'add'; available tools: none; the tools of 'web' could "
         "not be listed: MCPServerError: MCP server 'web' could not be reached: ConnectError: "
         "All connection attempts failed", True),
        ("4", False)]
    assert session.outcome is not None and session.outcome.status == "stopped"
    model.assert_complete()


def _asks_for_weather(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "tool":
        return f"It is: {last.content}"
    return f"{{weather(city='{last.content.split()[-1]}')}}"


def test_a_resumed_transcript_calls_no_tool_again_also_with_the_server_down(
        tmp_path: Path) -> None:
    path = tmp_path / "weather.jsonl"
    with FakeMCPServer([weather], name="meteo") as fake:
        server = fake.http(timeout=10)
        template = LoopTemplate([UserTemplate(), ToolingTemplate([server])])
        model = FunctionModel(_asks_for_weather)
        first = Session()
        writer = TranscriptWriter.create(path, first)
        Runner(model, template, ScriptedInterface(["in Oslo"]), on_event=writer).run(first)
        writer.close()
        up = Runner(model, template, ScriptedInterface(["in Rome"])).resume(path)
        assert fake.calls == [MCPCall("weather", {"city": "Oslo"}),
                              MCPCall("weather", {"city": "Rome"})]
    down = Runner(model, template, ScriptedInterface(["in Paris"])).resume(path)
    assert fake.calls == [MCPCall("weather", {"city": "Oslo"}),
                          MCPCall("weather", {"city": "Rome"})]
    assert up.messages[:4] == down.messages[:4] == first.messages
    assert [m.content for m in up.messages[4:]] == [
        "in Rome", "", "Sunny in Rome", "It is: Sunny in Rome"]
    assert down.messages[6].content.startswith(
        "Error: there is no tool named 'weather'; available tools: none; the tools of 'meteo' "
        "could not be listed: MCPServerError: MCP server 'meteo' could not be reached: ")
    assert down.outcome is not None and down.outcome.status == "stopped"


def _say(client: TestClient, cid: str, text: str) -> list[str]:
    response = client.post(f"/api/conversations/{cid}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()["added"]]


def test_a_served_rebuild_calls_no_tool_again_also_with_the_server_down(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'served.db'}"
    model = FunctionModel(_asks_for_weather)
    with FakeMCPServer([weather], name="meteo") as fake:
        template = LoopTemplate([UserTemplate(), ToolingTemplate([fake.http(timeout=10)])])
        with TestClient(create_app(template, model, store=store)) as client:
            cid = client.post("/api/conversations", json={}).json()["id"]
            assert _say(client, cid, "in Oslo")[-1] == "It is: Sunny in Oslo"
        with TestClient(create_app(template, model, store=store)) as client:  # rebuilt
            assert _say(client, cid, "in Rome")[-1] == "It is: Sunny in Rome"
        assert fake.calls == [MCPCall("weather", {"city": "Oslo"}),
                              MCPCall("weather", {"city": "Rome"})]
    with TestClient(create_app(template, model, store=store)) as client:  # server down
        added = _say(client, cid, "in Paris")
        messages = client.get(f"/api/conversations/{cid}").json()["messages"]
    assert fake.calls == [MCPCall("weather", {"city": "Oslo"}),
                          MCPCall("weather", {"city": "Rome"})]
    assert re.fullmatch(
        r"Error: there is no tool named 'weather'; available tools: none; the tools of 'meteo' "
        r"could not be listed: MCPServerError: MCP server 'meteo' could not be reached: .+",
        added[2])
    assert [m["content"] for m in messages][:8] == [
        "in Oslo", "", "Sunny in Oslo", "It is: Sunny in Oslo",
        "in Rome", "", "Sunny in Rome", "It is: Sunny in Rome"]
    assert len(messages) == 12


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_runner_close_stops_the_servers_of_the_template(mode: str) -> None:
    server = stdio_server(timeout=20)
    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([server])])
    runner = Runner(MockModel(["{pid()}", "ok"]), template)

    async def arun_then_aclose() -> int:  # the connection lives on this loop
        pid = int(tool_messages(await runner.arun())[0][0])
        os.kill(pid, 0)  # running
        await runner.aclose()
        return pid

    if mode == "run":
        pid = int(tool_messages(runner.run())[0][0])
        os.kill(pid, 0)  # running
        runner.close()
    else:
        pid = asyncio.run(arun_then_aclose())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert server._connection is None
    runner.close()  # twice is fine
