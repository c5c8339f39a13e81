"""`convo serve`'s API with the Temporal engine (create_app(engine=) given Temporal's, as `convo
serve --engine temporal://…` gives it): the same JSON answers and SSE stream, each turn run by
a `convo worker` process on the shared store; the HTTP process makes no model call (the bot's
model logs each call: only the worker's). The worker is the session's shared one."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_kit import GATED_BOT, GatedTest

from convo._temporal.engine import TemporalEngine
from convo.serve import create_app


@pytest.fixture
def served(gated: GatedTest, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("CONVO_TEST_DIR", str(gated.dir))
    spec = importlib.util.spec_from_file_location("gated_bot_http", GATED_BOT)
    assert spec is not None and spec.loader is not None
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    app = create_app(bot.template, bot.mock_model, store=gated.store_url,
                     engine=partial(TemporalEngine, address=gated.address, namespace="default",
                                    task_queue=gated.queue))
    with TestClient(app) as client:
        yield client


def _texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


def test_the_json_api_runs_on_temporal(served: TestClient, gated: GatedTest) -> None:
    created = served.post("/api/conversations", json={})
    assert created.status_code == 201
    body = created.json()
    cid = body["id"]
    assert (body["status"], body["waiting_for"]) == ("waiting", {"type": "user", "prompt": None})
    assert _texts(body["messages"]) == [("system", "Gated.")]
    said = served.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    assert said.status_code == 200
    assert _texts(said.json()["added"]) == [("user", "hi"), ("assistant", "You said 'hi'")]
    assert _texts(said.json()["messages"]) == [("system", "Gated."), ("user", "hi"),
                                               ("assistant", "You said 'hi'")]
    shown = served.get(f"/api/conversations/{cid}").json()
    assert shown["messages"] == said.json()["messages"]
    # the model was called once, by the worker (the HTTP process has no calls.txt of its own)
    assert gated.calls() == ["model hi"]
    assert gated.new_conversations(served) == [cid]  # (listed by this app)
    assert served.delete(f"/api/conversations/{cid}").status_code == 204
    assert served.get(f"/api/conversations/{cid}").status_code == 404


def test_sse_runs_on_temporal(served: TestClient) -> None:
    cid = served.post("/api/conversations", json={}).json()["id"]
    streamed = served.post(f"/api/conversations/{cid}/messages", json={"content": "hello"},
                           headers={"Accept": "text/event-stream"})
    assert streamed.status_code == 200
    events = [block.split("\n", 1)[0] for block in streamed.text.split("\n\n") if block]
    assert events == ["event: message", "event: message", "event: done"]
    assert 'data: {"role": "assistant", "content": "You said \'hello\'"' in streamed.text


def test_a_refused_turn_answers_the_served_status(served: TestClient) -> None:
    cid = served.post("/api/conversations", json={}).json()["id"]
    retried = served.post(f"/api/conversations/{cid}/retry", json={})
    assert retried.status_code == 409
    assert retried.json()["error"] == ("the conversation is waiting for a message, not a "
                                       "retry")
