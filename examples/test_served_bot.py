"""Testing a served bot's failures, in process: copy this file next to your own bot.

Run it with ``pytest examples/test_served_bot.py`` (needs the serve extra,
``pip install -e ".[serve]"`` in the checkout, and httpx). ``create_app`` gives the ASGI app
that ``convo serve`` runs; Starlette's
``TestClient`` talks to it without a network. A failed model call answers 502 with plain
words for the user and an ``error_id`` whose line in the ``convo.serve`` log has the cause; a
blank message is refused with 400; an ``Idempotency-Key`` makes a double-sent message cost
nothing.
"""

import logging

from starlette.testclient import TestClient

from convo import (
    AssistantTemplate,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    ModelError,
    SystemTemplate,
    UserTemplate,
)
from convo.serve import create_app


def reply(messages, tools):
    if messages[-1].content == "are you there?":
        raise ModelError("connection refused by http://10.0.0.5:8000/v1")
    return f"You said: {messages[-1].content}"


bot = LinearTemplate([SystemTemplate("You are brief."),
                      LoopTemplate([UserTemplate(), AssistantTemplate()])])


def test_a_failed_model_call_is_plain_words_and_a_logged_cause(caplog):
    with TestClient(create_app(bot, FunctionModel(reply), max_messages=50)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        failed = client.post(f"/api/conversations/{cid}/messages",
                             json={"content": "are you there?"})
    assert failed.status_code == 502
    assert failed.json()["error"] == "The assistant could not answer. Please try again."
    assert failed.json()["waiting_for"]["type"] == "retry"
    logged = [r.getMessage() for r in caplog.records
              if r.name == "convo.serve" and r.levelno == logging.ERROR]
    assert logged[-1].endswith(f"error_id={failed.json()['error_id']} cause: "
                               "connection refused by http://10.0.0.5:8000/v1")


def test_blank_messages_are_refused_and_keys_make_repeats_free():
    with TestClient(create_app(bot, FunctionModel(reply))) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}/messages"
        blank = client.post(url, json={"content": "   "})
        assert (blank.status_code, blank.json()["error"]) == (
            400, '"content" is empty or only whitespace: send some text')
        first = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "1"})
        again = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "1"})
        assert again.json() == first.json()
        shown = client.get(f"/api/conversations/{cid}").json()["messages"]
        assert [m["content"] for m in shown] == ["You are brief.", "hi", "You said: hi"]
