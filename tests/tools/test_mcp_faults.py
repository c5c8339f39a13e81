"""MCP servers that fail: every run ends with a stated outcome, never a hang or a raw
exception (API §17). Servers are real (``mcp_test_servers.py``)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_kit import HttpServer, free_port, stdio_server

from convo import MCPServer, Runner, Session
from convo._errors import MCPServerError
from convo.models import MockModel
from convo.templates import EndTemplate, LinearTemplate, ToolingTemplate, UserTemplate


def _run(server: MCPServer, script: list[str], mode: str = "run") -> Session:
    tree = LinearTemplate([UserTemplate("go"), ToolingTemplate([*server]), EndTemplate("Bye")])
    runner = Runner(MockModel(script), tree)
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    assert session.outcome is not None and session.outcome.status == "ended"
    return session


def _tools(session: Session) -> list[tuple[str, bool]]:
    return [(m.content, bool(m.metadata.get("error"))) for m in session.messages
            if m.role == "tool"]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_call_that_never_answers_is_an_error_result_giving_the_limit(mode: str) -> None:
    with stdio_server(timeout=30) as server:
        server.tools()  # started outside the limit the test is about (a loaded machine)
        server.timeout = 1.5
        session = _run(server, ["{hang()}", "{add(a=1, b=2)}", "ok"], mode)
    assert _tools(session) == [
        ("Error: tool 'hang' failed: MCPServerError: MCP server 'tools' did not answer a "
         "call of 'hang' within 1.5 s", True),
        ("3", False),  # the same session goes on
    ]


def test_a_server_that_dies_during_a_call_is_started_again_on_the_next() -> None:
    with stdio_server() as server:
        session = _run(server, ["{pid()}", "{die()}", "{pid()}", "ok"])
    (before, _), (died, error), (after, _) = _tools(session)
    assert error and died.startswith(
        "Error: tool 'die' failed: MCPServerError: MCP server 'tools' failed during a call "
        "of 'die': MCPError: Connection closed; its stderr ends: ")
    assert "dying on purpose" in died and died.endswith("; the next call will start it again")
    assert after.isdigit() and after != before


def test_a_server_killed_between_calls_fails_one_call_then_comes_back() -> None:
    with stdio_server() as server:
        pid = server.tools()[5]
        assert pid.remote_name == "pid"
        first = asyncio.run(pid._execute({}))
        os.kill(int(first), signal.SIGKILL)
        session = _run(server, ["{pid()}", "{pid()}", "ok"])
    (failed, error), (second, _) = _tools(session)
    assert error and failed == (
        "Error: tool 'pid' failed: MCPServerError: MCP server 'tools' failed during a call of "
        "'pid': MCPError: Connection closed; the next call will start it again")
    assert second.isdigit() and second != first


def _failed_start(server: MCPServer) -> str:
    """What ``server`` says when its tools are asked for and it cannot start."""
    with pytest.raises(MCPServerError) as info:
        server.tools()
    return str(info.value)


def test_a_command_that_does_not_exist() -> None:
    server = MCPServer.stdio("no-such-mcp-server-here", timeout=5)
    assert _failed_start(server) == (
        "MCP server 'no-such-mcp-server-here' could not start: the "
        "command 'no-such-mcp-server-here' was not found")


def test_a_server_that_crashes_at_start_is_named_with_its_stderr() -> None:
    server = stdio_server("crash_on_start", name="db", timeout=20)
    assert _failed_start(server) == (
        "MCP server 'db' could not start: MCPError: Connection closed; "
        "its stderr ends: 'cannot open the database'")


def test_a_server_that_never_answers_at_start_is_bounded() -> None:
    server = stdio_server("hang_on_start", name="stuck", timeout=1.5)
    assert _failed_start(server) == "MCP server 'stuck' did not start within 1.5 s"
    with pytest.raises(MCPServerError):  # tried again, bounded again
        server.tools()


def test_closing_stops_the_subprocess() -> None:
    server = stdio_server()
    pid = int(asyncio.run(server.tools()[5]._execute({})))
    server.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    server.close()  # twice is fine


def test_an_http_server_that_restarts_gets_a_new_session(http_server: HttpServer) -> None:
    with MCPServer.http(http_server.url, timeout=10) as server:
        assert _tools(_run(server, ["{add(a=1, b=1)}", "ok"])) == [("2", False)]
        http_server.stop()
        http_server.start()  # the old session id is unknown to the new process
        assert _tools(_run(server, ["{add(a=2, b=2)}", "ok"])) == [("4", False)]


def test_an_http_server_that_is_down_is_an_error_result_then_comes_back(
        http_server: HttpServer) -> None:
    with MCPServer.http(http_server.url, timeout=10) as server:
        tools = server.tools()
        http_server.stop()
        session = _run(server, ["{add(a=1, b=1)}", "ok"])
        http_server.start()
        again = _run(server, ["{add(a=3, b=3)}", "ok"])
    assert tools[0].remote_name == "add"
    assert _tools(session) == [
        ("Error: tool 'add' failed: MCPServerError: MCP server 'web' failed during a call of "
         "'add': MCPError: Connection closed; the next call will start it again", True)]
    assert _tools(again) == [("6", False)]


def test_a_forked_worker_opens_its_own_connection(tools_server: MCPServer) -> None:
    pid = tools_server.tools()[5]
    parent = asyncio.run(pid._execute({}))
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the worker: the parent's session lives on a loop this process lacks
        try:
            os.write(write, asyncio.run(pid._execute({})).encode())
        finally:
            tools_server.close()
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        got = answer.read()
    os.waitpid(child, 0)
    assert got.isdigit() and got != parent  # a server of its own
    assert asyncio.run(pid._execute({})) == parent  # the parent's is untouched


def test_a_program_that_ends_right_after_a_failed_start_leaves_no_server(
        tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = ("from mcp_kit import stdio_server\n"
            f"server = stdio_server('hang_on_start', timeout=5, env={{'PIDFILE': "
            f"{str(pidfile)!r}}})\n"
            "try:\n    server.tools()\nexcept Exception as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "MCP server 'python' did not start within 5 s\n"
    with pytest.raises(ProcessLookupError):  # stopped at exit, not left to run for an hour
        os.kill(int(pidfile.read_text()), 0)


def test_an_http_server_that_is_not_there() -> None:
    server = MCPServer.http(f"http://127.0.0.1:{free_port()}/mcp", name="web", timeout=10)
    with pytest.raises(MCPServerError) as info:
        server.tools()
    assert str(info.value) == ("MCP server 'web' could not be reached: ConnectError: All "
                               "connection attempts failed")
