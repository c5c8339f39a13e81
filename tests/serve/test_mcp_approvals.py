"""Approvals of a bot served as an MCP tool (API.md §25 Details), with the `mcp` SDK's client
against a real `convo mcp` subprocess: asked through elicitation when the client declared form
elicitation — on a 2026-07-28 connection as an `InputRequiredResult` (SEP-2322), on an older
one as `elicitation/create` requests — one per pending call, in order; accept with approve
runs the call, approve false / decline / cancel rejects it; without the capability the reply
is the waiting text with status "waiting"; an approval routed to an operator is never
elicited."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

BOT = str(Path(__file__).resolve().parents[1] / "serve_fixtures" / "served_tool_bot.py")
TOOL = "refunds"
PARAMS = StdioServerParameters(command=sys.executable,
                               args=["-m", "convo", "mcp", BOT, "--tool-name", TOOL])


def text(result: Any) -> str:
    assert [c.type for c in result.content] == ["text"]
    return str(result.content[0].text)


class Asked:
    """An elicitation callback answering from a script, recording what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        self.schemas: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        self.schemas.append(params.requested_schema)
        return self.answers.pop(0)


def accept(approve: bool, reason: str | None = None) -> types.ElicitResult:
    content: dict[str, Any] = {"approve": approve}
    if reason is not None:
        content["reason"] = reason
    return types.ElicitResult(action="accept", content=content)


def asks(conversation: str, *orders: str) -> list[str]:
    return [f'Approve refund({{"order": "{order}"}}) (conversation {conversation!r})?'
            for order in orders]


def test_older_connections_are_asked_with_elicitation_create_one_per_call_in_order() -> None:
    asked = Asked(accept(True), accept(False, "a gift"), types.ElicitResult(action="decline"),
                  types.ElicitResult(action="cancel"))

    async def main() -> None:
        async with Client(PARAMS, mode="legacy", elicitation_callback=asked) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [TOOL]
            started = await client.call_tool(TOOL, {"message": "refund A1 B2"})
            conversation = started.structured_content["conversation_id"]
            assert text(started) == ("Refunding.\n\nDone: refunded A1; Rejected by the user: "
                                     "a gift")
            assert started.structured_content["status"] == "waiting"
            assert asked.asked == asks(conversation, "A1", "B2")
            assert asked.schemas[0]["required"] == ["approve"]
            assert sorted(asked.schemas[0]["properties"]) == ["approve", "reason"]

            again = await client.call_tool(TOOL, {"message": "refund C3 D4",
                                                  "conversation_id": conversation})
            assert text(again) == ("Refunding.\n\nDone: Rejected by the user; Rejected by the "
                                   "user")
            assert asked.asked[2:] == asks(conversation, "C3", "D4")

    asyncio.run(main())


def test_2026_connections_get_an_input_required_result_naming_the_conversation() -> None:
    asked = Asked(accept(True), accept(True))

    async def main() -> None:
        async with Client(PARAMS, mode="2026-07-28", elicitation_callback=asked) as client:
            first = await client.call_tool(TOOL, {"message": "hello"})
            conversation = first.structured_content["conversation_id"]
            raw = await client.session.call_tool(
                TOOL, {"message": "refund A1 B2", "conversation_id": conversation},
                allow_input_required=True)
            assert isinstance(raw, types.InputRequiredResult)
            requests = raw.input_requests or {}
            assert [r.method for r in requests.values()] == ["elicitation/create"] * 2
            assert [r.params.message for r in requests.values()] == asks(
                conversation, "A1", "B2")
            state = json.loads(raw.request_state or "")
            assert state["conversation_id"] == conversation
            assert state["calls"] == list(requests)
            assert state["said"] == ["Refunding."]

            answered = await client.session.call_tool(
                TOOL, {"message": "refund A1 B2", "conversation_id": conversation},
                input_responses={key: accept(key == state["calls"][0])
                                 for key in requests},
                request_state=raw.request_state)
            assert isinstance(answered, types.CallToolResult)
            assert text(answered) == ("Refunding.\n\nDone: refunded A1; Rejected by the user")

            stale = await client.session.call_tool(
                TOOL, {"message": "x", "conversation_id": conversation},
                input_responses={key: accept(True) for key in requests},
                request_state=raw.request_state)
            assert stale.is_error
            assert text(stale) == (f"these approvals are no longer pending in conversation "
                                   f"{conversation!r}: call again with a message")

            driven = await client.call_tool(TOOL, {"message": "refund E5 F6",
                                                   "conversation_id": conversation})
            assert text(driven) == "Refunding.\n\nDone: refunded E5; refunded F6"
            assert asked.asked == asks(conversation, "E5", "F6")

    asyncio.run(main())


def test_without_form_elicitation_the_reply_says_what_waits() -> None:
    async def main() -> None:
        async with Client(PARAMS, mode="2026-07-28") as client:
            waiting = await client.call_tool(TOOL, {"message": "refund A1 B2"})
            conversation = waiting.structured_content["conversation_id"]
            assert not waiting.is_error
            assert text(waiting) == (
                f'Refunding.\n\nConversation {conversation!r} waits for your approval of '
                'refund({"order": "A1"}), refund({"order": "B2"}); this MCP client did not '
                "declare form elicitation, so it cannot be asked here: use a client that "
                "supports elicitation, or serve the bot with convo serve and approve it on its "
                "chat page.")
            shown = waiting.structured_content
            assert (shown["status"], shown["waiting_for"]["type"],
                    [c["arguments"] for c in shown["waiting_for"]["calls"]]) == (
                "waiting", "approval", [{"order": "A1"}, {"order": "B2"}])
            more = await client.call_tool(TOOL, {"message": "hi",
                                                 "conversation_id": conversation})
            assert more.is_error
            assert text(more) == (
                "a message cannot be taken while an approval is pending: Conversation "
                f'{conversation!r} waits for your approval of refund({{"order": "A1"}}), '
                'refund({"order": "B2"}); this MCP client did not declare form elicitation, '
                "so it cannot be asked here: use a client that supports elicitation, or serve "
                "the bot with convo serve and approve it on its chat page.")

    asyncio.run(main())


def test_an_approval_routed_to_an_operator_is_never_elicited() -> None:
    asked = Asked()

    async def main() -> None:
        for mode in ("legacy", "2026-07-28"):
            async with Client(PARAMS, mode=mode, elicitation_callback=asked) as client:
                waiting = await client.call_tool(TOOL, {"message": "staff A1"})
                conversation = waiting.structured_content["conversation_id"]
                assert text(waiting) == (f"Conversation {conversation!r} waits for an operator "
                                         'to approve or reject wipe({"order": "A1"}).')
                assert waiting.structured_content["waiting_for"]["approver"] == "operator"
        assert asked.asked == []

    asyncio.run(main())
