"""Branches (§28) on the Temporal engine: `POST /api/conversations/{id}/branch` in a `convo
serve --engine temporal://…` process stores the branch and starts its own workflow, rebuilt
from the store by a `convo worker` process (a branch before a reply makes that model call
again there); a branch while the original's turn runs is 409, a bad index 400. The AI SDK
face, through the `ai` package itself: a message streamed to its client, then its
`regenerate-message` (a branch under the chat's id; the original, under its new id, goes
on in a workflow of its own)."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_kit import GATED_BOT, GatedTest, Worker, sse, until

from convo._runner import Runner
from convo._temporal.engine import TemporalEngine
from convo.serve import create_app
from convo.serve._engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from aisdk_kit import chat, parts, types


def _said(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in body["messages"]]


def test_branches_and_the_ai_sdk_regenerate_run_on_temporal(gated: GatedTest,
                                                           tmp_path: Path) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    gate = gated.gate
    gate.touch()
    try:
        client = gated.client
        cid = client.post("/api/conversations", json={}).json()["id"]
        for text in ("hi", "tool"):
            assert client.post(f"/api/conversations/{cid}/messages",
                               json={"content": text}).status_code == 200
        original = client.get(f"/api/conversations/{cid}").json()
        before_user = client.post(f"/api/conversations/{cid}/branch", json={"before": 3})
        branch = before_user.json()["id"]
        went_on = client.post(f"/api/conversations/{branch}/messages",
                              json={"content": "other"})
        with client.stream("POST", f"/api/conversations/{cid}/branch", json={"before": 2},
                           headers={"Accept": "text/event-stream"}) as response:
            regenerated = list(sse(response.iter_lines()))
        bad = client.post(f"/api/conversations/{cid}/branch", json={"before": 0})
        unchanged = client.get(f"/api/conversations/{cid}").json()

        gate.unlink()
        gated.entered.unlink(missing_ok=True)

        def waiting() -> int:
            return client.post(f"/api/conversations/{branch}/messages",
                               json={"content": "wait"}).status_code

        running = pool.submit(waiting)
        until(gated.entered.exists, "the branch's turn never started")
        busy = client.post(f"/api/conversations/{branch}/branch", json={"before": 1})
        gate.touch()
        assert running.result(60) == 200

        url = f"http://127.0.0.1:{gated.port}"
        chat_id = f"chat-{tmp_path.name}"  # (the dev server is the session's: ids its own)
        ran = chat(url, chat_id, {"say": ["u1", "hi"]}, {"regenerate": True})
        chat_now = client.get(f"/api/conversations/{chat_id}").json()
        kept_as = chat_now["parent"]["id"]
        kept = client.get(f"/api/conversations/{kept_as}").json()
        kept_goes_on = client.post(f"/api/conversations/{kept_as}/messages",
                                   json={"content": "more"})
    finally:
        gate.touch()
        pool.shutdown(wait=False, cancel_futures=True)
    assert before_user.status_code == 201, before_user.text
    made = before_user.json()
    assert made["parent"] == {"id": cid, "before": 3}
    assert made["messages"] == original["messages"][:3] and made["added"] == []
    assert made["not_undone"] == [
        {"id": "t4", "name": "slow_note", "arguments": {"text": "hi"}},
        {"id": "f6", "name": "finish", "arguments": {}}]
    assert made["waiting_for"] == {"type": "user", "prompt": None}
    assert _said(went_on.json())[3:] == [("user", "other"), ("assistant", "You said 'other'")]
    assert [e for e, _ in regenerated][-1] == "done"
    done = regenerated[-1][1]
    assert done["parent"] == {"id": cid, "before": 2} and done["not_undone"][0]["id"] == "t4"
    assert _said(done)[1:] == [("user", "hi"), ("assistant", "You said 'hi'")]
    assert [(m["role"], m["content"]) for m in done["added"]] == [
        ("assistant", "You said 'hi'")]
    assert ("message", done["added"][0]) in regenerated
    assert bad.status_code == 400 and "before=0" in bad.json()["error"]
    assert unchanged["messages"] == original["messages"]
    assert busy.status_code == 409
    assert busy.json() == {"error": f"a turn is running in conversation {branch!r}: branch it "
                                    "once the turn is over"}

    submitted, again = ran["runs"]
    assert types(submitted)[0] == "start" and types(submitted)[-1] == "finish"
    assert parts(submitted["message"]) == [("step-start",), ("text", "You said 'hi'")]
    assert parts(again["message"]) == [("step-start",), ("text", "You said 'hi'")]
    assert again["errors"] == [] and "refused" not in again
    assert chat_now["parent"] == {"id": kept_as, "before": 2} and kept_as != chat_id
    assert _said(chat_now)[1:] == [("user", "hi"), ("assistant", "You said 'hi'")]
    assert chat_now["messages"][2]["id"] != kept["messages"][2]["id"]
    assert _said(kept)[1:] == [("user", "hi"), ("assistant", "You said 'hi'")]
    assert (kept_goes_on.status_code, _said(kept_goes_on.json())[3:]) == (
        200, [("user", "more"), ("assistant", "You said 'more'")])
    assert [c for c in gated.calls() if c.startswith("model ")] == [
        "model hi", "model tool", "model other", "model hi", "model wait", "model hi",
        "model hi", "model more"]


@pytest.fixture
def served(temporal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[TestClient]:
    """The app with the Temporal engine in this process (a `convo worker` process runs the
    turns): the HTTP side, whose every replay of a template this process records."""
    queue = f"branch-front-{tmp_path.name}"
    worker = Worker(temporal, tmp_path, queue)
    monkeypatch.setenv("CONVO_TEST_DIR", str(tmp_path))
    spec = importlib.util.spec_from_file_location("gated_bot_branches", GATED_BOT)
    assert spec is not None and spec.loader is not None
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    app = create_app(bot.template, bot.mock_model, store=f"sqlite:///{tmp_path / 'convo.db'}",
                     engine=partial(TemporalEngine, address=temporal, namespace="default",
                                    task_queue=queue))
    try:
        with TestClient(app) as client:
            yield client
    finally:
        worker.stop()


def test_the_http_process_makes_no_branch_and_replays_no_template(
        served: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Branch, dry run, regenerate, a refused index and the AI SDK's regenerate: the workers
    make each (the activity ``convo.branch``); this process starts, replays and rebuilds no
    run of the template."""
    replays: list[str] = []

    def recorded(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            replays.append(name)
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(Runner, "start", recorded("Runner.start", Runner.start))
    monkeypatch.setattr(Runner, "abranch", recorded("Runner.abranch", Runner.abranch))
    monkeypatch.setattr(Engine, "_rebuilt", recorded("Engine._rebuilt", Engine._rebuilt))
    cid = served.post("/api/conversations", json={}).json()["id"]
    for text in ("hi", "there"):
        assert served.post(f"/api/conversations/{cid}/messages",
                           json={"content": text}).status_code == 200
    original = served.get(f"/api/conversations/{cid}").json()
    dry = served.post(f"/api/conversations/{cid}/branch", json={"before": 3, "dry_run": True})
    edit = served.post(f"/api/conversations/{cid}/branch", json={"before": 3})
    again = served.post(f"/api/conversations/{cid}/branch", json={"before": 4})
    bad = served.post(f"/api/conversations/{cid}/branch", json={"before": 0})
    bad_dry = served.post(f"/api/conversations/{cid}/branch",
                          json={"before": 0, "dry_run": True})
    ui = [{"id": m["id"], "role": m["role"], "parts": [{"type": "text", "text": m["content"]}]}
          for m in original["messages"][1:]]
    regenerated = served.post("/ai-sdk/chat", json={
        "id": cid, "messages": ui, "trigger": "regenerate-message"})
    chat = served.get(f"/api/conversations/{cid}").json()
    kept = served.get(f"/api/conversations/{chat['parent']['id']}").json()
    assert replays == []
    assert (dry.status_code, dry.json()) == (200, {"before": 3, "not_undone": []})
    assert edit.status_code == 201, edit.text
    assert edit.json()["parent"] == {"id": cid, "before": 3}
    assert edit.json()["messages"] == original["messages"][:3]
    assert edit.json()["waiting_for"] == {"type": "user", "prompt": None}
    assert again.status_code == 201, again.text
    assert [(m["role"], m["content"]) for m in again.json()["added"]] == [
        ("assistant", "You said 'there'")]
    assert (bad.status_code, bad_dry.status_code) == (400, 400)
    assert "before=0" in bad.json()["error"] and bad_dry.json() == bad.json()
    assert regenerated.status_code == 200, regenerated.text
    assert chat["parent"]["before"] == 4 and chat["parent"]["id"] != cid
    assert [(m["role"], m["content"]) for m in chat["messages"]] == [
        (m["role"], m["content"]) for m in original["messages"]]
    assert chat["messages"][4]["id"] != original["messages"][4]["id"]
    assert kept["messages"] == original["messages"]
