"""A handoff survives a worker killed with SIGKILL (API.md §19): a real `convo serve` of
examples/staffed_support_bot.py on SQLite and on Postgres, killed in the middle of a handoff
and again after the hand-back; each new worker rebuilds the same conversation from the store,
waiting where it waited, and the bot then goes on with everything said in its history."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from message_json import unnumbered
from serve_kit import ROOT, Served

BOT = str(ROOT / "examples" / "staffed_support_bot.py")
ANN = {"Authorization": "Bearer t-ann"}
OLGA = {"Authorization": "Bearer t-olga"}
HANDED = "The conversation was handed to a person: the customer asked for a person."


def _worker(folder: Path, store: str) -> Served:
    users = folder / "users.json"
    users.write_text(json.dumps({"t-ann": {"user": "ann"},
                                 "t-olga": {"user": "olga", "role": "operator"}}))
    return Served(BOT, folder, "--store", store, "--users", str(users))


def _killed(served: Served) -> None:
    served.process.send_signal(signal.SIGKILL)
    served.process.wait()
    served.client.close()


def _texts(body: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(m["role"], m["content"], (m.get("metadata") or {}).get("author"))
            for m in body["messages"]]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'convo.db'}"
    return str(request.getfixturevalue("postgres").fresh())


def test_a_handoff_is_rebuilt_after_sigkill_mid_handoff_and_after_handback(
        tmp_path: Path, store: str) -> None:
    one = _worker(tmp_path, store)
    try:
        cid = one.client.post("/api/conversations", json={}, headers=ANN).json()["id"]
        url = f"/api/conversations/{cid}"
        handed = one.client.post(f"{url}/messages", json={"content": "a person, please"},
                                 headers=ANN).json()
        assert handed["waiting_for"] == {"type": "operator",
                                         "reason": "the customer asked for a person"}
        assert one.client.post(f"{url}/messages", json={"content": "my kettle leaks"},
                               headers=ANN).status_code == 200
        assert one.client.post(f"{url}/operator_messages", headers=OLGA,
                               json={"content": "I'll send a new one."}).status_code == 200
    finally:
        _killed(one)
    during = [
        ("system", handed["messages"][0]["content"], None),
        ("user", "a person, please", None), ("assistant", "", None), ("tool", HANDED, None),
        ("user", "my kettle leaks", None), ("assistant", "I'll send a new one.", "olga")]

    two = _worker(tmp_path, store)
    try:
        shown = two.client.get(url, headers=ANN).json()
        assert _texts(shown) == during
        assert (shown["status"], shown["waiting_for"]) == (
            "waiting", {"type": "operator", "reason": "the customer asked for a person"})
        said = two.client.post(f"{url}/messages", json={"content": "thank you"}, headers=ANN)
        assert unnumbered(said.json()["added"]) == [{"role": "user", "content": "thank you"}]
        back = two.client.post(f"{url}/handback", json={}, headers=OLGA)
        assert (back.status_code, back.json()["added"]) == (200, [])
        assert back.json()["waiting_for"] == {"type": "user", "prompt": None}
    finally:
        _killed(two)
    during.append(("user", "thank you", None))

    three = _worker(tmp_path, store)
    try:
        shown = three.client.get(url, headers=OLGA).json()
        assert _texts(shown) == during
        assert shown["waiting_for"] == {"type": "user", "prompt": None}
        again = three.client.post(f"{url}/operator_messages", json={"content": "hi"},
                                  headers=OLGA)
        assert again.status_code == 409  # handed back: no handoff to talk in
        after = three.client.post(f"{url}/messages", json={"content": "ok"}, headers=ANN)
        assert after.status_code == 200
        assert [m["content"] for m in after.json()["added"]] == [
            "ok", "I'm back. olga told you: \"I'll send a new one.\""]
        assert _texts(after.json())[:-2] == during
    finally:
        three.stop()
