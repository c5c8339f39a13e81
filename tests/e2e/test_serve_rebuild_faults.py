"""A served conversation whose worker was killed while a tool ran is rebuilt waiting for a
retry (not stuck at 409 forever), and the retry runs the cut-off call again with its call id.
Real `convo serve` processes, killed with SIGKILL, on SQLite."""

from __future__ import annotations

from pathlib import Path

import httpx
from serve_process_kit import WAIT_S, Server, killed_in_its_turn, post_in_background, wait_until

BOT = str(Path(__file__).resolve().parents[1] / "serve_fixtures" / "blocking_tool_bot.py")


def test_killed_while_a_tool_runs_the_conversation_waits_for_retry(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'convo.db'}"
    server = Server(store, tmp_path, bot=BOT)
    try:
        cid = server.post("/api/conversations").json()["id"]
        assert server.post(f"/api/conversations/{cid}/messages",
                           {"content": "book"}).status_code == 200
        blocked = post_in_background(server.url, cid, "block")
        killed_in_its_turn(server, blocked, tmp_path)
        server = Server(store, tmp_path, bot=BOT)
        body = server.client.get(f"/api/conversations/{cid}").json()
        assert body["status"] == "waiting"
        assert body["waiting_for"]["type"] == "retry"
        assert body["messages"][-1]["tool_calls"][0]["name"] == "charge"
        call_id = body["messages"][-1]["tool_calls"][0]["id"]
        refused = server.post(f"/api/conversations/{cid}/messages", {"content": "x"})
        assert refused.status_code == 409
        assert "retry" in refused.json()["error"]
        retried = server.post(f"/api/conversations/{cid}/retry")
        assert retried.status_code == 200, retried.text
        assert [m["content"] for m in retried.json()["added"]] == [
            "charged block", "done: charged block", "Finished"]
        assert retried.json()["waiting_for"] == {"type": "user", "prompt": None}
        assert server.post(f"/api/conversations/{cid}/messages",
                           {"content": "more"}).status_code == 200
        lines = (tmp_path / "tool_calls.txt").read_text().splitlines()
        # the cut-off call ran again with the same call id (at least once); nothing else twice
        assert [line.split()[1] for line in lines] == ["book", "block", "block", "more"]
        assert lines[1].split()[0] == lines[2].split()[0] == call_id
    finally:
        server.stop()


def test_a_blocking_sync_tool_does_not_block_the_worker(tmp_path: Path) -> None:
    # The tool blocks until the gate opens, and the gate opens only after health answered:
    # with the tool on the event loop, health would never answer (the client gives up).
    server = Server(f"sqlite:///{tmp_path / 'convo.db'}", tmp_path, bot=BOT)
    try:
        cid = server.post("/api/conversations").json()["id"]
        blocked = post_in_background(server.url, cid, "block", print_status=True)
        wait_until((tmp_path / "entered").exists, blocked)
        assert (tmp_path / "entered").exists()
        with httpx.Client(base_url=server.url, timeout=5.0) as client:
            assert client.get("/api/health").status_code == 200
            other = client.post("/api/conversations").json()["id"]
            assert client.get(f"/api/conversations/{other}").json()["status"] == "waiting"
        (tmp_path / "gate").touch()
        out, _ = blocked.communicate(timeout=WAIT_S)
        assert out.strip() == "200"
    finally:
        server.stop()
