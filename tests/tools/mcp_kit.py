"""Fixtures for the MCP tests: real servers written with the ``mcp`` SDK
(``mcp_test_servers.py``), over stdio and over Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from convo import MCPServer

SERVERS = str(Path(__file__).with_name("mcp_test_servers.py"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stdio_server(kind: str = "tools", **options: object) -> MCPServer:
    return MCPServer.stdio(sys.executable, [SERVERS, kind], **options)  # type: ignore[arg-type]


@pytest.fixture
def tools_server() -> Iterator[MCPServer]:
    with stdio_server("tools", timeout=10) as server:
        yield server


class HttpServer:
    """``mcp_test_servers.py http PORT`` in a subprocess; can be killed and started again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, SERVERS, "http", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # readiness, not timing: the port accepts
            assert self.process.poll() is None, "the HTTP MCP server exited at start"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the HTTP MCP server did not listen within 30 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
