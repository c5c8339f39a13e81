"""`convo mcp BOT_FILE` (API.md §25): a bot as one MCP tool over stdio, driven by the `mcp`
SDK's own client against a real `convo mcp` subprocess: the tool's name and description, one
turn per call, multi-turn by conversation id, tool error results."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from convo._botfile import bot_identity, load_file
from convo.serve._mcp_face import tool_name

ROOT = Path(__file__).resolve().parents[2]
BOT = str(ROOT / "tests" / "serve_fixtures" / "served_tool_bot.py")
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
            other_id = other.structured_content["conversation_id"]
            assert other_id != conversation

            failed = await client.call_tool(TOOL, {"message": "fail",
                                                    "conversation_id": other_id})
            assert failed.is_error
            assert text(failed) == ("the bot's model call failed; the conversation waits for "
                                    f"a retry (conversation {other_id!r})")  # no cause shown
            stuck = await client.call_tool(TOOL, {"message": "hi",
                                                  "conversation_id": other_id})
            assert (stuck.is_error, text(stuck)) == (True, (
                f"the turn did not finish: POST /api/conversations/{other_id}/retry before "
                "a message"))

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


def _documented_config() -> dict[str, Any]:
    """The desktop client config docs/serving.md shows (the JSON block after its marker)."""
    page = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    block = page.split("<!-- mcp-desktop-config -->\n```json\n", 1)[1].split("```", 1)[0]
    servers: dict[str, Any] = json.loads(block)["mcpServers"]
    assert list(servers) == ["refund-desk"]
    return dict(servers["refund-desk"])


def test_the_documented_desktop_config_runs(tmp_path: Path) -> None:
    """The command and arguments of the documented config, as a desktop client runs them: the
    `convo` script installed beside this Python, the bot path and the store made absolute (as
    the page says to), and no key (the bot runs on its mock_model)."""
    config = _documented_config()
    assert config["command"] == "convo"
    convo = shutil.which("convo", path=str(Path(sys.executable).parent))
    assert convo is not None
    args = [str(ROOT / a) if a.endswith(".py") else a for a in config["args"]]
    args = [f"sqlite:///{tmp_path / a[len('sqlite:///'):]}" if a.startswith("sqlite:///")
            else a for a in args]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    params = StdioServerParameters(command=convo, args=args, env=env, cwd=str(tmp_path))

    async def main() -> None:
        async with Client(params) as client:
            [listed] = (await client.list_tools()).tools
            assert listed.name == "refund_bot"
            assert listed.description is not None
            assert listed.description.startswith("A support bot that asks a person before")
            reply = await client.call_tool("refund_bot", {"message": "Where is A1?"})
            assert not reply.is_error
            assert text(reply) == "Order A1: a kettle, 25.00 EUR, delivered. Anything else?"

    asyncio.run(main())
    assert (tmp_path / "refunds.db").exists()  # the store the config names
