"""`/mcp` on `convo serve` (API.md §25): the bot as one MCP tool over Streamable HTTP, driven by
the `mcp` SDK's own HTTP client against a real `convo serve` process on a free port, under
§19's sign-in (a token per person) and ownership (another user's conversation id is a tool
error result, HTTP 200); a conversation started over MCP is the native API's too."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import process_kit
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from serve_kit import TEMPLATE, free_port, healthy, model

from convo.serve import create_app

BOT = str(Path(__file__).resolve().parents[1] / "serve_fixtures" / "served_tool_bot.py")
TOOL = "Refund_desk__test_"
USERS = {"ann-token": {"user": "ann"}, "bob-token": {"user": "bob"}}


class Served:
    """A `convo serve` process of the bot, its stderr in ``log``."""

    def __init__(self, folder: Path, *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        users = folder / "users.json"
        users.write_text(json.dumps(USERS))
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CONVO_SERVE_TOKEN")}
        self.log = folder / "serve.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "convo", "serve", BOT, "--port", str(self.port),
                 "--store", "memory", "--users", str(users), *options],
                env=env, stdout=subprocess.DEVNULL, stderr=log)
        with httpx.Client(base_url=self.url) as probe:
            if not healthy(self.process, probe, self.log, 60):
                raise AssertionError("convo serve did not become healthy")

    def stop(self) -> None:
        process_kit.stop(self.process, 30, signal.SIGTERM)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path)
    yield server
    server.stop()


@contextlib.asynccontextmanager
async def client(served: Served, token: str, headers: dict[str, str] | None = None,
                 **options: Any) -> AsyncIterator[Client]:
    """The SDK's client at /mcp, signed in with ``token`` (and sending ``headers``)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}",
                                           **(headers or {})}) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http),
                          **options) as connected:
            yield connected


def text(result: Any) -> str:
    assert [c.type for c in result.content] == ["text"]
    return str(result.content[0].text)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_mcp_over_http_multi_turn_signed_in_and_owned(served: Served, mode: str) -> None:
    async def main() -> str:
        async with client(served, "ann-token", mode=mode) as ann:
            listed = (await ann.list_tools()).tools
            assert [(t.name, t.description) for t in listed] == [
                (TOOL, "Refunds orders after the user approves each refund.")]
            first = await ann.call_tool(TOOL, {"message": "hello"})
            assert (first.is_error, text(first)) == (False, "Hello!\n\nDone: noted")
            conversation = str(first.structured_content["conversation_id"])
            again = await ann.call_tool(TOOL, {"message": "again",
                                               "conversation_id": conversation})
            assert text(again) == "You said 'again'"
            assert again.structured_content == {
                "conversation_id": conversation, "status": "waiting",
                "waiting_for": {"type": "user", "prompt": None}}
        async with client(served, "bob-token", mode=mode) as bob:
            theirs = await bob.call_tool(TOOL, {"message": "hi",
                                                "conversation_id": conversation})
            assert theirs.is_error
            assert text(theirs) == (f"no conversation {conversation!r}: start one by leaving "
                                    "conversation_id out")
            unknown = await bob.call_tool(TOOL, {"message": "hi", "conversation_id": "nope"})
            assert (unknown.is_error, text(unknown)) == (
                True, "no conversation 'nope': start one by leaving conversation_id out")
        return conversation

    conversation = asyncio.run(main())
    native = httpx.get(f"{served.url}/api/conversations/{conversation}",
                       headers={"Authorization": "Bearer ann-token"})
    assert native.status_code == 200
    assert [m["content"] for m in native.json()["messages"] if m["role"] == "user"] == [
        "hello", "again"]
    assert httpx.get(f"{served.url}/api/conversations/{conversation}",
                     headers={"Authorization": "Bearer bob-token"}).status_code == 404


def test_mcp_needs_sign_in(served: Served) -> None:
    unsigned = httpx.post(f"{served.url}/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"})
    assert unsigned.status_code == 401
    assert unsigned.json() == {"error": "this server needs a token: send the header "
                                        "Authorization: Bearer <token>"}
    wrong = httpx.post(f"{served.url}/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream",
                 "Authorization": "Bearer wrong-token"})
    assert wrong.status_code == 401


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_approvals_are_elicited_over_http(served: Served, mode: str) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": len(asked) == 1})

    async def main() -> None:
        async with client(served, "ann-token", mode=mode, elicitation_callback=answer) as ann:
            done = await ann.call_tool(TOOL, {"message": "refund A1 B2"})
            conversation = done.structured_content["conversation_id"]
            assert text(done) == "Refunding.\n\nDone: refunded A1; Rejected by the user"
            assert asked == [f'Approve refund({{"order": "{order}"}}) (conversation '
                             f"{conversation!r})?" for order in ("A1", "B2")]
        async with client(served, "ann-token", mode=mode) as unasked:
            waiting = await unasked.call_tool(TOOL, {"message": "refund C3",
                                                     "conversation_id": conversation})
            assert text(waiting) == (
                f'Refunding.\n\nConversation {conversation!r} waits for your approval of '
                'refund({"order": "C3"}); this MCP client did not declare form elicitation, '
                "so it cannot be asked here: approve or reject it on the chat page, or with "
                f"POST /api/conversations/{conversation}/approvals.")

    asyncio.run(main())


def _listed(app: Any) -> list[tuple[str, str | None]]:
    """The tools the app's /mcp lists, through the SDK's client in-process."""
    [endpoint] = [r.app for r in app.routes if getattr(r, "path", None) == "/mcp"]

    async def main() -> list[tuple[str, str | None]]:
        async with Client(endpoint._make().app, mode="legacy") as client:
            return [(t.name, t.description) for t in (await client.list_tools()).tools]

    return asyncio.run(main())


def test_create_app_names_the_tool_after_its_title_or_tool_name() -> None:
    assert _listed(create_app(TEMPLATE, model())) == [
        ("Chat", "Talk with Chat: send the user's message, get the bot's reply.")]
    assert _listed(create_app(TEMPLATE, model(), title="Mugs & Co.")) == [
        ("Mugs___Co.", "Talk with Mugs & Co.: send the user's message, get the bot's reply.")]
    assert _listed(create_app(TEMPLATE, model(), tool_name="refund desk",
                              description="Refunds orders.")) == [
        ("refund_desk", "Refunds orders.")]
    assert [r for r in create_app(TEMPLATE, model(), faces=["native"]).routes
            if getattr(r, "path", None) == "/mcp"] == []


def _user_messages(served: Served, conversation: str) -> list[str]:
    shown = httpx.get(f"{served.url}/api/conversations/{conversation}",
                      headers={"Authorization": "Bearer ann-token"}).json()
    return [m["content"] for m in shown["messages"] if m["role"] == "user"]


def test_idempotency_keys_over_http_header_or_meta(served: Served) -> None:
    """On /mcp a call's key is the POST's Idempotency-Key header or its `_meta` key: a repeat
    answers as the first did and runs nothing; other arguments under the key, or a header
    and a `_meta` key that differ, are tool error results (HTTP stays 200); keys that start a
    conversation are scoped per caller."""
    async def main() -> tuple[str, str]:
        async with client(served, "ann-token", mode="2026-07-28",
                          headers={"Idempotency-Key": "h1"}) as ann:
            first = await ann.call_tool(TOOL, {"message": "hello"})
            again = await ann.call_tool(TOOL, {"message": "hello"})
            assert (again.is_error, text(again), again.structured_content) == (
                False, text(first), first.structured_content)
            other = await ann.call_tool(TOOL, {"message": "bye"})
            assert (other.is_error, text(other)) == (True, (
                "this idempotency key was used with other arguments: use a new key for "
                "another call"))
            both = await ann.call_tool(TOOL, {"message": "hello"},
                                       meta={"idempotencyKey": "m1"})
            assert (both.is_error, text(both)) == (True, (
                "the Idempotency-Key header ('h1') and _meta \"idempotencyKey\" ('m1') "
                "differ: send one key"))
        conversation = str(first.structured_content["conversation_id"])
        async with client(served, "ann-token") as ann:
            said = {"message": "again", "conversation_id": conversation}
            kept = [await ann.call_tool(TOOL, said, meta={"idempotencyKey": "m1"})
                    for _ in range(2)]
            assert [(r.is_error, text(r)) for r in kept] == [(False, "You said 'again'")] * 2
        async with client(served, "bob-token", headers={"Idempotency-Key": "h1"}) as bob:
            theirs = await bob.call_tool(TOOL, {"message": "hello"})  # bob's own h1
            assert (theirs.is_error, text(theirs)) == (False, "Hello!\n\nDone: noted")
            bobs = str(theirs.structured_content["conversation_id"])
        return conversation, bobs

    conversation, bobs = asyncio.run(main())
    assert bobs != conversation
    assert _user_messages(served, conversation) == ["hello", "again"]


def test_a_keyed_call_that_asked_approvals_repeats_its_final_answer(served: Served) -> None:
    """On a 2026-07-28 connection the client's call with the approvals' answers carries the
    key again and finishes the call; a repeat then answers that final result, asking and
    running nothing."""
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def main() -> str:
        async with client(served, "ann-token", mode="2026-07-28",
                          elicitation_callback=answer) as ann:
            done = await ann.call_tool(TOOL, {"message": "refund A1"},
                                       meta={"idempotencyKey": "r1"})
            assert text(done) == "Refunding.\n\nDone: refunded A1"
            again = await ann.call_tool(TOOL, {"message": "refund A1"},
                                        meta={"idempotencyKey": "r1"})
            assert (text(again), again.structured_content) == (
                text(done), done.structured_content)
            return str(done.structured_content["conversation_id"])

    conversation = asyncio.run(main())
    assert len(asked) == 1
    assert _user_messages(served, conversation) == ["refund A1"]
