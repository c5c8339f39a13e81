"""MCPServer against real MCP servers: listing, calls under run() and arun(), results,
approval, resume, name clashes (API §17)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest
from mcp_kit import HttpServer, stdio_server
from process_kit import printed

from convo import (
    Approval,
    Limits,
    MCPServer,
    Runner,
    ScriptedInterface,
    Session,
    ToolDefinitionError,
)
from convo._parts import shown
from convo._resume import resume
from convo.events import ToolCallEnded
from convo.models import MockModel
from convo.templates import EndTemplate, LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import Tool

ALL = ["add", "echo", "fail", "hang", "die", "pid", "picture", "two_lines", "data_only",
       "say_hello", "grow", "media", "bad_image"]


def _tree(tools: Iterable[Tool]) -> LinearTemplate:
    return LinearTemplate([UserTemplate("go"), ToolingTemplate([*tools]), EndTemplate("Bye")])


def _tool_messages(session: Session) -> list[tuple[str, bool]]:
    """Each tool message as a screen shows it (an image as a placeholder), and whether it is
    an error."""
    return [(shown(m.content), bool(m.metadata.get("error"))) for m in session.messages
            if m.role == "tool"]


def test_tools_are_listed_with_the_servers_schemas(tools_server: MCPServer) -> None:
    tools = tools_server.tools()
    assert [t.name for t in tools] == ALL
    add = tools[0].schema()["function"]
    assert add["description"] == "Add two numbers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert add["parameters"]["properties"]["a"]["type"] == "integer"
    assert tools_server.name == "tools"  # the name the server reports
    assert tools_server.tools()[0] is tools[0]  # listed once, cached
    assert tools[9].remote_name == "say.hello"  # the name the server is called with


def test_prefix_include_and_exclude_use_the_servers_own_names() -> None:
    with stdio_server(prefix="fs_", include=["add", "echo", "fail"], exclude=["fail"]) as s:
        assert [t.name for t in s.tools()] == ["fs_add", "fs_echo"]
        assert s.tools()[0].remote_name == "add"


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_calls_under_run_and_arun(tools_server: MCPServer, mode: str) -> None:
    model = MockModel(["{add(a=2, b=3)}{echo(text='hi')}{say_hello()}",
                       "{two_lines()}{data_only()}",
                       "{picture()}{fail(why='no disk')}", "Done."])
    runner = Runner(model, _tree(tools_server))
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    assert _tool_messages(session) == [
        ("5", False), ("hi", False), ("hello", False), ("first\nsecond", False),
        ('{"temperature": 21, "unit": "C"}', False),
        ("a red dot\n[image: image/png, 60 B]", False),
        ("Error: tool 'fail' failed: MCPServerError: MCP server 'tools' says the call of "
         "'fail' failed: Error executing tool fail: no disk", True),
    ]
    assert session.outcome is not None and session.outcome.status == "ended"
    model.assert_complete()


def test_needs_approval_asks_with_the_servers_tool_name() -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    def rule(name: str, args: dict[str, object]) -> bool:
        seen.append((name, args))
        return name == "echo"

    with stdio_server(prefix="x_", needs_approval=rule) as server:
        user = ScriptedInterface([], approvals=[Approval(False, "not now")])
        model = MockModel(["{x_add(a=1, b=1)}{x_echo(text='secret')}", "ok"])
        session = Runner(model, _tree(server), user).run()
    assert seen == [("add", {"a": 1, "b": 1}), ("echo", {"text": "secret"})]
    assert [c.name for c in user.asked_approvals] == ["x_echo"]
    assert _tool_messages(session) == [("2", False), ("Rejected by the user: not now", False)]


def test_a_resumed_run_does_not_call_the_server_again(tools_server: MCPServer) -> None:
    tools = tools_server.tools()
    first = Runner(MockModel(["{pid()}", "ok"]), _tree(tools)).run()
    pid = first.messages[2].content
    tools_server.close()  # a call on resume would start a new process with another pid
    template, session = resume(_tree(tools), first)
    again = Runner(MockModel([]), template).run(session)
    assert [m.content for m in again.messages] == [m.content for m in first.messages]
    assert again.messages[2].content == pid
    assert tools_server._connection is None  # nothing was started


def test_a_clash_of_names_names_both_servers() -> None:
    with stdio_server("tools") as one, stdio_server("other") as two:
        with pytest.raises(ToolDefinitionError) as info:
            ToolingTemplate([*one, *two])
        assert str(info.value) == (
            "ToolingTemplate: two tools are named 'add': <MCPTool 'add' of MCP server "
            "'tools'> and <MCPTool 'add' of MCP server 'other'> (tools[13])")
    with stdio_server("tools") as one, stdio_server("other", prefix="b_") as two:
        assert "b_add" in [t.name for t in ToolingTemplate([*one, *two]).tools]


def test_missing_arguments_are_the_models_error_not_a_call(tools_server: MCPServer) -> None:
    model = MockModel(["{add(a=1)}", "ok"])
    session = Runner(model, _tree(tools_server)).run()
    assert _tool_messages(session) == [
        ("Error: missing argument(s) 'b' for 'add'; send an object with a (integer), "
         "b (integer)", True)]


def test_the_tool_list_is_listed_again_after_list_changed(tools_server: MCPServer) -> None:
    assert "extra" not in [t.name for t in tools_server.tools()]
    session = Runner(MockModel(["{grow()}", "ok"]), _tree(tools_server)).run()
    assert _tool_messages(session) == [("grown", False)]
    assert [t.name for t in tools_server.tools()][-1] == "extra"


def test_streamable_http(http_server: HttpServer) -> None:
    with MCPServer.http(http_server.url, headers={"X-Test": "1"}, timeout=10) as server:
        model = MockModel(["{add(a=20, b=22)}", "ok"])
        session = asyncio.run(Runner(model, _tree(server)).arun())
        assert server.name == "web"
    assert _tool_messages(session) == [("42", False)]


def test_import_convo_does_not_import_the_mcp_sdk() -> None:
    code = ("import sys, convo; from convo import MCPServer; "
            "print(sorted(m for m in ('mcp', 'anyio', 'httpx2') if m in sys.modules))")
    assert printed(code) == "[]"


def test_limits_count_mcp_calls_and_events_show_them(tools_server: MCPServer) -> None:
    events: list[object] = []
    model = MockModel(["{add(a=1, b=1)}{echo(text='x')}", "ok"])
    session = Runner(model, _tree(tools_server), limits=Limits(tool_calls=1),
                     on_event=events.append).run()
    assert _tool_messages(session) == [
        ("2", False), ("Not run: the tool_calls limit was reached", True)]
    ended = [(e.call.name, e.content) for e in events if isinstance(e, ToolCallEnded)]
    assert ended == [("add", "2"), ("echo", "Not run: the tool_calls limit was reached")]
