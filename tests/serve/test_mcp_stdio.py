"""`convo mcp BOT_FILE` (API.md §25): a bot as one MCP tool over stdio, driven by the `mcp`
SDK's own client against a real `convo mcp` subprocess: the tool's name and description, one
turn per call, multi-turn by conversation id, tool error results."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from convo.botfile import bot_identity, load_file
from convo.serve.mcp_face import tool_name

BOT = str(Path(__file__).resolve().parents[1] / "serve_fixtures" / "served_tool_bot.py")
TOOL = "Refund_desk__test_"


def stdio(*options: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "convo", "mcp", BOT, *options])


def text(result: Any) -> str:
    assert [c.type for c in result.content] == ["text"]
    return str(result.content[0].text)


def test_the_tool_name_is_the_bots_name_with_other_characters_replaced() -> None:
    assert tool_name("Refund desk (test)") == TOOL
    assert tool_name("support.bot-2_x") == "support.bot-2_x"
    assert tool_name("Café") == "Caf_"


def test_a_bot_is_named_by_its_title_else_its_stem_and_said_by_its_description(
        tmp_path: Path) -> None:
    assert bot_identity(load_file(BOT), BOT) == (
        "Refund desk (test)", "Refunds orders after the user approves each refund.")
    plain = tmp_path / "help_desk.py"
    plain.write_text('"""Answers questions about the help desk."""\n'
                     "from convo import UserTemplate\ntemplate = UserTemplate()\n")
    assert bot_identity(load_file(str(plain)), str(plain)) == (
        "help_desk", "Answers questions about the help desk.")
    plain.write_text("from convo import UserTemplate\ntemplate = UserTemplate()\n")
    assert bot_identity(load_file(str(plain)), str(plain)) == ("help_desk", None)


def test_one_tool_one_turn_per_call_multi_turn_by_conversation_id() -> None:
    async def main() -> None:
        async with Client(stdio(), mode="legacy") as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == [TOOL]
            assert listed[0].description == "Refunds orders after the user approves each refund."
            assert listed[0].input_schema["required"] == ["message"]
            assert sorted(listed[0].input_schema["properties"]) == ["conversation_id", "message"]

            first = await client.call_tool(TOOL, {"message": "hello"})
            assert not first.is_error
            assert text(first) == "Hello!\n\nDone: noted"  # the turn's texts, a blank line apart
            conversation = first.structured_content["conversation_id"]
            assert first.structured_content == {
                "conversation_id": conversation, "status": "waiting",
                "waiting_for": {"type": "user", "prompt": None}}

            again = await client.call_tool(TOOL, {"message": "again",
                                                  "conversation_id": conversation})
            assert text(again) == "You said 'again'"
            assert again.structured_content["conversation_id"] == conversation

            other = await client.call_tool(TOOL, {"message": "other"})
            assert other.structured_content["conversation_id"] != conversation

            bye = await client.call_tool(TOOL, {"message": "bye",
                                                "conversation_id": conversation})
            assert text(bye) == "Goodbye."
            assert bye.structured_content == {"conversation_id": conversation,
                                              "status": "ended", "waiting_for": None}

            ended = await client.call_tool(TOOL, {"message": "hi",
                                                  "conversation_id": conversation})
            assert ended.is_error
            assert text(ended) == f"conversation {conversation!r} has ended"

            unknown = await client.call_tool(TOOL, {"message": "hi", "conversation_id": "nope"})
            assert unknown.is_error
            assert text(unknown) == ("no conversation 'nope': start one by leaving "
                                     "conversation_id out")

            empty = await client.call_tool(TOOL, {"message": " "})
            assert empty.is_error
            assert text(empty) == '"message" must be a non-empty string: what the user says'

    asyncio.run(main())
