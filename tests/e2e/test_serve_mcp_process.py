"""`convo serve` as a real process (uvicorn) with a stdio MCP server: the worker's conversations
share one connection, which lives on the serving loop (no hand-off per call); stopped with
Ctrl-C the worker leaves no child process, and killed with SIGKILL its MCP server does not
outlive it — also when the server is inside a call, which the retry makes again with the same
call id in the request's ``_meta``."""

from __future__ import annotations

import os
import select
from pathlib import Path

from serve_process_kit import (
    Server,
    post_in_background,
    retried_once_the_lease_lapses,
    wait_until,
)

FIXTURES = Path(__file__).resolve().parents[1] / "serve_fixtures"
BOT = str(FIXTURES / "mcp_bot.py")
SIDE_EFFECTS_BOT = str(FIXTURES / "mcp_side_effects_bot.py")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as file:
            found += [int(child) for child in file.read().split()]
    return sorted(found)


def _exists(pid: int) -> bool:
    """Whether the process exists and has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _said(server: Server, cid: str, content: str) -> str:
    reply = server.post(f"/api/conversations/{cid}/messages", {"content": content})
    assert reply.status_code == 200, reply.text
    return str(reply.json()["added"][-1]["content"])


def _serve_and_ask(tmp_path: Path) -> tuple[Server, int]:
    server = Server(f"sqlite:///{tmp_path / 'convo.db'}", tmp_path, BOT)
    first, second = (server.post("/api/conversations").json()["id"] for _ in range(2))
    said = _said(server, first, "pid")
    assert said.startswith("said ")
    pid = int(said.removeprefix("said "))
    assert _said(server, second, "pid") == said  # one connection per worker, shared
    assert _said(server, second, "where") == "said the serving loop"
    assert _children(server.process.pid) == [pid]
    return server, pid


def test_a_served_worker_stopped_leaves_no_child_process(tmp_path: Path) -> None:
    server, pid = _serve_and_ask(tmp_path)
    assert server.stop() == 0
    # The app's shutdown closed the server on the serving loop and reaped its process.
    assert not _exists(pid)


def test_a_served_worker_killed_with_sigkill_leaves_no_mcp_server(tmp_path: Path) -> None:
    server, pid = _serve_and_ask(tmp_path)
    exited = os.pidfd_open(pid)
    try:
        server.kill()
        # Its stdin closed with the worker: the MCP server ends on its own (a readiness wait).
        ready, _, _ = select.select([exited], [], [], 30)
    finally:
        os.close(exited)
    assert ready == [exited] and not _exists(pid)


def test_a_worker_killed_during_an_mcp_call_leaves_no_mcp_server(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'convo.db'}"
    server = Server(store, tmp_path, SIDE_EFFECTS_BOT, "--lease", "1")
    calls = tmp_path / "calls"
    try:
        cid = server.post("/api/conversations").json()["id"]
        asking = post_in_background(server.url, cid, "act")
        # until the MCP server is inside the call
        wait_until(lambda: calls.exists() and calls.read_text().endswith("\n"), asking)
        pid_text, call_id = calls.read_text().split()
        pid = int(pid_text)
        assert _exists(pid) and call_id.startswith("call_")
        exited = os.pidfd_open(pid)
        try:
            server.kill()
            ready, _, _ = select.select([exited], [], [], 30)  # a readiness wait, bounded
        finally:
            os.close(exited)
            asking.kill()
            asking.wait()
        assert ready == [exited] and not _exists(pid)
    finally:
        (tmp_path / "gate").touch()  # lets a server left behind end
        server.stop()
    # The retry runs the call whose result was not stored again, with the same call id.
    server = Server(store, tmp_path, SIDE_EFFECTS_BOT, "--lease", "1")
    try:
        retried = retried_once_the_lease_lapses(server, cid)  # the dead worker's (1 s)
        assert retried.json()["added"][-1]["content"] == f"said acted, call {call_id}"
        assert [line.split()[1] for line in calls.read_text().splitlines()] == [call_id] * 2
    finally:
        server.stop()
