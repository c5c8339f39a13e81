"""`convo serve` as a process (API.md §20): JSON request logs on stderr, `--max-messages`,
`--debug-errors`, and a local model server that is down answered at once (no start wait)."""

from __future__ import annotations

import json
from pathlib import Path

from serve_kit import ROOT, Served, free_port

BOT = str(ROOT / "tests" / "serve_fixtures" / "faults_bot.py")


def test_json_logs_and_max_messages(tmp_path: Path) -> None:
    served = Served(BOT, tmp_path, "--store", "memory", "--log-format", "json",
                    "--max-messages", "4")
    try:
        cid = served.client.post("/api/conversations", json={}).json()["id"]
        first = served.client.post(f"/api/conversations/{cid}/messages", json={"content": "a"})
        second = served.client.post(f"/api/conversations/{cid}/messages", json={"content": "b"})
        assert (first.json()["status"], second.json()["status"]) == ("waiting", "ended")
        assert second.json()["outcome"]["status"] == "max_messages"
        assert [m["content"] for m in second.json()["messages"]] == [
            "You are a test bot.", "a", "You said 'a'", "b"]
    finally:
        log = served.stop()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert [sorted(line) for line in lines] == [sorted(
        ["time", "method", "path", "status", "ms", "conversation", "user"])] * 4
    assert [(x["method"], x["path"], x["status"], x["conversation"], x["user"])
            for x in lines] == [
        ("GET", "/api/health", 200, None, "default"),
        ("POST", "/api/conversations", 201, cid, "default"),
        ("POST", f"/api/conversations/{cid}/messages", 200, cid, "default"),
        ("POST", f"/api/conversations/{cid}/messages", 200, cid, "default")]


def test_a_local_model_server_that_is_down_is_a_plain_502_at_once(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    served = Served(BOT, tmp_path, "--store", "memory", "--base-url", down,
                    env={"CONVO_START_WAIT": "30"})
    try:
        cid = served.client.post("/api/conversations", json={}).json()["id"]
        # The client gives up after 20 s: a 30 s start wait would fail this test.
        failed = served.client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        assert failed.status_code == 502
        assert failed.json()["error"] == "The assistant could not answer. Please try again."
    finally:
        log = served.stop()
    assert "waiting for the server" not in log
    assert f"error_id={failed.json()['error_id']} cause: " in log
    assert down.rsplit("/", 1)[0].split("//")[1] not in failed.text


def test_debug_errors_shows_the_cause(tmp_path: Path) -> None:
    served = Served(BOT, tmp_path, "--store", "memory", "--debug-errors")
    try:
        cid = served.client.post("/api/conversations", json={}).json()["id"]
        failed = served.client.post(f"/api/conversations/{cid}/messages",
                                    json={"content": "fail"})
    finally:
        served.stop()
    assert failed.json()["error"] == "the model at http://10.9.8.7:1234/v1 refused the connection"
