"""The hand-off between a caller's event loop and the MCP loop (convo/tools/_mcp/loop.py): the
result or the error comes back, and a caller that gives up cancels the work on the MCP loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from convo import MCPServer
from convo.tools._mcp import loop as loop
from convo.tools._mcp import server as server


async def _on_which_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


async def _fails() -> None:
    raise KeyError("gone")


def test_the_result_and_the_error_come_back_from_the_mcp_loop() -> None:
    async def main() -> asyncio.AbstractEventLoop:
        with pytest.raises(KeyError, match="gone"):
            await loop.hand_off(_fails())
        return await loop.hand_off(_on_which_loop())

    assert asyncio.run(main()) is loop.background_loop()


@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_a_caller_that_gives_up_cancels_the_work_on_the_mcp_loop(how: str) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        future = loop.hand_off(forever())
        if how == "timeout":
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await future
        else:
            await asyncio.to_thread(started.wait, 10)
            future.cancel()
            with pytest.raises(asyncio.CancelledError):
                await future

    asyncio.run(main())
    assert cancelled.wait(10)  # set by the coroutine itself, on the MCP loop


def test_a_listed_server_gives_a_turn_its_tools_without_the_mcp_loop(
        tools_server: MCPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = tools_server.tools()

    def refused(coro: object) -> None:
        raise AssertionError("the tools were asked of the MCP loop again")

    monkeypatch.setattr(server, "hand_off", refused)
    monkeypatch.setattr(server, "submit", refused)
    assert tools_server.tools() == listed
    assert asyncio.run(tools_server.atools()) == listed
