"""API.md §9/§20: errors known before a turn starts are the promised JSON 4xx even when a
stream was asked for (not an HTTP 200 stream with `event: error`), and no turn's exception is
left for asyncio to report ("Task exception was never retrieved")."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
from serve_kit import TEMPLATE, model

from convo.serve import create_app

STREAM = {"Accept": "text/event-stream"}


async def _refusals() -> tuple[list[tuple[int, str, Any]], list[dict[str, Any]]]:
    unretrieved: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unretrieved.append(ctx))
    app = create_app(TEMPLATE, model())
    answers = []
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        url = f"/api/conversations/{cid}"
        await c.post(f"{url}/messages", json={"content": "refund A1"})
        for path, body in ((f"{url}/messages", {"content": "hi"}),
                           (f"{url}/messages", {"content": "hi"}),
                           (f"{url}/retry", {}), (f"{url}/approvals", {"decisions": []}),
                           ("/api/conversations/nope/retry", {})):
            headers = dict(STREAM)
            if len(answers) == 1:
                headers["Idempotency-Key"] = "k"
            r = await c.post(path, json=body, headers=headers)
            answers.append((r.status_code, r.headers["content-type"], r.json()))
        streamed = await c.post(f"{url}/approvals", headers=STREAM, json={"decisions": [
            {"call_id": "call_1", "approve": True}]})
        answers.append((streamed.status_code, streamed.headers["content-type"],
                        streamed.text.count("event: done")))
    gc.collect()
    await asyncio.sleep(0)
    return answers, unretrieved


def test_refusals_before_a_turn_are_json_even_when_a_stream_was_asked_for() -> None:
    answers, unretrieved = asyncio.run(_refusals())
    kinds = [(status, kind) for status, kind, _ in answers]
    assert kinds == [(409, "application/json")] * 3 + [(400, "application/json"),
                                                       (404, "application/json"),
                                                       (200, "text/event-stream; charset=utf-8")]
    assert answers[0][2]["error"].startswith("an approval is pending: answer it with POST")
    assert answers[2][2]["error"].startswith("an approval is pending")
    assert answers[3][2] == {"error": "decide every pending call; missing: call_1"}
    assert answers[4][2] == {"error": "no conversation 'nope'"}
    assert answers[5][2] == 1  # the approved turn streams as before
    assert unretrieved == []
