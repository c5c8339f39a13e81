"""`create_app(..., max_messages=N)` (API.md §20): passed to the Runner, so a served
conversation ends at N messages, not at the Runner's default 1,000."""

from __future__ import annotations

from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import create_app


def test_max_messages_ends_a_served_conversation() -> None:
    with TestClient(create_app(TEMPLATE, model(), max_messages=4)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}/messages"
        assert client.post(url, json={"content": "a"}).json()["status"] == "waiting"
        ended = client.post(url, json={"content": "b"}).json()
        assert (ended["status"], ended["outcome"]["status"], len(ended["messages"])) == (
            "ended", "max_messages", 4)
        assert client.post(url, json={"content": "c"}).status_code == 409
