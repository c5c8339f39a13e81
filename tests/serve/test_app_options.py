"""`create_app(..., max_messages=N)` (API.md §20): passed to the Runner, so a served
conversation ends at N messages, not at the Runner's default 1,000; `create_app(engine=)`."""

from __future__ import annotations

from typing import Any

import pytest
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


def test_the_engine_is_made_by_the_callers_factory_from_the_runner_and_store() -> None:
    """`create_app(engine=)` takes what makes the engine (`convo serve --engine` passes
    Temporal's); a string is refused, saying what is taken."""
    from convo.serve._engine import Engine

    made: list[Any] = []

    def engine(runner: Any, store: Any) -> Engine:
        made.append((runner, store))
        return Engine(runner, store)

    with TestClient(create_app(TEMPLATE, model(), engine=engine)) as client:
        assert client.post("/api/conversations", json={}).status_code == 201
    assert len(made) == 1 and type(made[0][1]).__name__ == "MemoryStore"
    with pytest.raises(TypeError) as refused:
        create_app(TEMPLATE, model(), engine="temporal://127.0.0.1:7233")  # type: ignore[arg-type]
    assert str(refused.value) == (
        "engine must be a callable making the engine from the app's runner and store, "
        "engine(runner, store) (convo serve --engine temporal://... builds Temporal's), got "
        "'temporal://127.0.0.1:7233'")
