"""Which loop an MCP server's connection lives on (convo/tools/_mcp/home.py), against a real
stdio server: the first async user's loop, where a call goes straight to the session; a call
from another loop or thread is handed there; an ``asyncio.run`` that ended leaves neither a
dead server nor a process; a blocking ``run()`` makes no event loop per call."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_kit import stdio_server

from convo import LinearTemplate, MCPServer, MockModel, Runner, ToolingTemplate, UserTemplate
from convo._errors import MCPServerError
from convo.tools._mcp import connection as connection_module
from convo.tools._mcp import server as server_module
from convo.tools._mcp.connection import Connection


@pytest.fixture
def call_loops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[asyncio.AbstractEventLoop]]:
    """The loop each ``Connection.call`` ran on, in order."""
    loops: list[asyncio.AbstractEventLoop] = []
    original = Connection.call

    async def recording(self: Connection, name: str, arguments: dict[str, Any],
                        call_id: str | None = None) -> Any:
        loops.append(asyncio.get_running_loop())
        return await original(self, name, arguments, call_id)

    monkeypatch.setattr(Connection, "call", recording)
    yield loops


def _pid_tool(server: MCPServer, tools: list[Any]) -> Any:
    [pid] = [t for t in tools if t.remote_name == "pid"]
    return pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_call_on_the_loop_of_the_first_user_goes_straight_to_the_session(
        call_loops: list[asyncio.AbstractEventLoop], monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object) -> None:
        raise AssertionError("a call was handed to another loop")

    monkeypatch.setattr(server_module, "hand_off", refused)
    monkeypatch.setattr(server_module, "submit", refused)

    async def main() -> tuple[asyncio.AbstractEventLoop, list[str]]:
        async with stdio_server(timeout=20) as server:
            pid = _pid_tool(server, await server.atools())
            said = [await pid.ainvoke({}) for _ in range(3)]
            return asyncio.get_running_loop(), said

    loop, said = asyncio.run(main())
    assert call_loops == [loop, loop, loop]
    assert said[0].isdigit() and said == [said[0]] * 3  # one connection, one process


def test_an_asyncio_run_that_ended_leaves_no_process_and_the_next_one_works(
        call_loops: list[asyncio.AbstractEventLoop]) -> None:
    server = stdio_server(timeout=20)
    try:
        async def pid_now() -> int:
            return int(await _pid_tool(server, await server.atools()).ainvoke({}))

        first = asyncio.run(pid_now())
        # The loop's teardown stopped the server its connection lived on, and reaped it.
        assert not _alive(first)
        second = asyncio.run(pid_now())
        third = asyncio.run(pid_now())
        # Started again once, on the background loop, where it stays: not per asyncio.run.
        assert second != first and third == second and _alive(second)
        home = server._where.current()
        assert home is not None and home.background and call_loops[-1] is home.loop
    finally:
        server.close()
    assert not _alive(second)


def test_a_call_from_another_loop_or_thread_is_handed_to_the_servers_loop(
        call_loops: list[asyncio.AbstractEventLoop]) -> None:
    def elsewhere(pid: Any) -> list[str]:
        return [asyncio.run(pid.ainvoke({})), pid.invoke({})]  # another loop; no loop

    async def main() -> tuple[asyncio.AbstractEventLoop, str, list[str]]:
        async with stdio_server(timeout=20) as server:
            pid = _pid_tool(server, await server.atools())
            here = await pid.ainvoke({})
            there = await asyncio.to_thread(elsewhere, pid)
            return asyncio.get_running_loop(), here, there

    loop, here, there = asyncio.run(main())
    assert call_loops == [loop, loop, loop]
    assert there == [here, here]


def test_a_blocking_run_makes_no_event_loop_per_call(
        call_loops: list[asyncio.AbstractEventLoop], monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("asyncio.run was called for an MCP call")

    with stdio_server(timeout=20) as server:
        template = LinearTemplate([UserTemplate("go"), ToolingTemplate([server])])
        monkeypatch.setattr(asyncio, "run", refused)
        session = Runner(MockModel(["{add(a=2, b=3)}{pid()}", "ok"]), template).run()
        home = server._where.current()
    added, pid = (m.content for m in session.messages if m.role == "tool")
    assert added == "5" and isinstance(pid, str) and pid.isdigit()
    assert home is not None and home.background
    assert call_loops == [home.loop, home.loop]


def test_a_call_handed_to_a_loop_that_ends_meanwhile_is_an_error_naming_the_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    listed, calling = threading.Event(), threading.Event()
    original = Connection.call

    async def noting(self: Connection, name: str, arguments: dict[str, Any],
                     call_id: str | None = None) -> Any:
        calling.set()
        return await original(self, name, arguments, call_id)

    monkeypatch.setattr(Connection, "call", noting)
    server = stdio_server(timeout=20)

    async def home_loop() -> None:  # the connection's loop; it ends during a call of "hang"
        await server.atools()
        listed.set()
        assert await asyncio.to_thread(calling.wait, 20)

    thread = threading.Thread(target=asyncio.run, args=(home_loop(),))
    try:
        thread.start()
        assert listed.wait(20)
        [hang] = [t for t in server.tools() if t.remote_name == "hang"]  # from the cache
        with pytest.raises(MCPServerError) as info:
            hang.invoke({})  # handed to the loop above
        assert str(info.value) == (
            "MCP server 'tools': the event loop its connection lived on ended during the "
            "call; the next call will start it again")
        thread.join(20)
        assert not thread.is_alive()
        assert _pid_tool(server, server.tools()).invoke({}).isdigit()  # on the background
    finally:
        thread.join(20)
        server.close()


def test_calls_are_bounded_by_one_timer_and_a_cancelled_call_stays_cancelled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = Connection.call
    calling: list[asyncio.Event] = []

    async def noting(self: Connection, name: str, arguments: dict[str, Any],
                     call_id: str | None = None) -> Any:
        calling[-1].set()
        return await original(self, name, arguments, call_id)

    monkeypatch.setattr(Connection, "call", noting)

    async def main() -> tuple[str, float, list[str]]:
        calling.append(asyncio.Event())
        async with stdio_server(timeout=20) as server:
            tools = {t.remote_name: t for t in await server.atools()}
            said = [await tools["add"].ainvoke({"a": 1, "b": 2})]  # the timer: in 20 s
            server.timeout = 0.5
            said.append(await tools["add"].ainvoke({"a": 2, "b": 2}))  # now: in 0.5 s
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(MCPServerError) as info:  # the timer fires, then again
                async with asyncio.timeout(15):  # a test that fails does not hang
                    await tools["hang"].ainvoke({})
            waited = loop.time() - started
            server.timeout = 20
            calling.append(asyncio.Event())
            call = asyncio.create_task(tools["hang"].ainvoke({}))
            await calling[-1].wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):  # the caller's, not a bound
                await call
            said.append(await tools["add"].ainvoke({"a": 3, "b": 3}))
            home = server._where.current()
            assert home is not None and home._due == {} and home._late == set()
            return str(info.value), waited, said

    error, waited, said = asyncio.run(main())
    assert error == "MCP server 'tools' did not answer a call of 'hang' within 0.5 s"
    # "About 0.5 s", not less: a loop's timer may run a few microseconds before its time.
    assert waited >= 0.49
    assert said == ["3", "4", "6"]


@pytest.mark.parametrize("how", ["run", "a loop left stopped", "asyncio.run"])
def test_a_program_that_ends_without_closing_leaves_no_server(how: str) -> None:
    call = {"run": "print(pid(server.tools()).invoke({}))",
            "a loop left stopped": ("loop = asyncio.new_event_loop()\n"
                                    "print(loop.run_until_complete(main()))"),
            "asyncio.run": "print(asyncio.run(main()))"}[how]
    code = ("import asyncio\nfrom mcp_kit import stdio_server\n"
            "server = stdio_server(timeout=20)\n"
            "def pid(tools):\n    return next(t for t in tools if t.remote_name == 'pid')\n"
            "async def main():\n    return await pid(await server.atools()).ainvoke({})\n"
            + call + "\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == ""
    with pytest.raises(ProcessLookupError):  # closed by the program and waited for
        os.kill(int(done.stdout), 0)


def test_a_with_block_inside_async_code_closes_the_server_on_its_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_module, "CLOSE_TIMEOUT", 600.0)  # no bound to end a self-wait

    async def main() -> int:
        with stdio_server(timeout=20) as server:  # a blocking close() on the loop it lives on
            pid = int(await _pid_tool(server, await server.atools()).ainvoke({}))
        loop = asyncio.get_running_loop()
        [closing] = [t for t in connection_module._closing if t.get_loop() is loop]
        done, _ = await asyncio.wait({closing}, timeout=30)  # not waiting for itself
        assert done == {closing}
        return pid

    assert not _alive(asyncio.run(main()))
