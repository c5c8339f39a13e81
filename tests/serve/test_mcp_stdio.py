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
from convo.serve._stores import open_store
from convo.testing import ErrorReply, OpenAIServer

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
                                    f"a retry (conversation {other_id!r}): call the tool again "
                                    "with this conversation_id and the same message to "
                                    "retry")  # no cause shown
            stuck = await client.call_tool(TOOL, {"message": "hi",
                                                  "conversation_id": other_id})
            assert (stuck.is_error, text(stuck)) == (True, (
                f"conversation {other_id!r} waits for a retry of its last turn, which failed: "
                "call the tool again with the same message ('fail') to retry it, then send "
                "this one"))

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


RETRY_BOT = """\"\"\"Says what the model says.\"\"\"
from convo import LoopTemplate, ToolingTemplate, UserTemplate

title = "Echo"
template = LoopTemplate([UserTemplate(), ToolingTemplate([])])
"""


def test_a_failed_turn_is_retried_over_stdio_by_calling_again_with_the_same_message(
        tmp_path: Path) -> None:
    """Over stdio there is no HTTP route: the tool itself retries. The model (the fake
    OpenAI server) fails once; the same message again retries the failed turn (it is not
    added twice), another message first is refused saying how to retry."""
    bot = tmp_path / "echo_bot.py"
    bot.write_text(RETRY_BOT)
    with OpenAIServer(["Hi there.", ErrorReply(400), "Your second, answered."]) as model:
        env = {**os.environ, "OPENAI_API_KEY": "test-key"}
        params = StdioServerParameters(command=sys.executable, env=env, args=[
            "-m", "convo", "mcp", str(bot), "--base-url", model.base_url, "-m", "gpt-test"])

        async def main() -> None:
            async with Client(params) as client:
                first = await client.call_tool("Echo", {"message": "first"})
                assert text(first) == "Hi there."
                conversation = first.structured_content["conversation_id"]
                failed = await client.call_tool("Echo", {"message": "second",
                                                         "conversation_id": conversation})
                assert (failed.is_error, text(failed)) == (True, (
                    "the bot's model call failed; the conversation waits for a retry "
                    f"(conversation {conversation!r}): call the tool again with this "
                    "conversation_id and the same message to retry"))
                other = await client.call_tool("Echo", {"message": "third",
                                                        "conversation_id": conversation})
                assert (other.is_error, text(other)) == (True, (
                    f"conversation {conversation!r} waits for a retry of its last turn, which "
                    "failed: call the tool again with the same message ('second') to retry "
                    "it, then send this one"))
                retried = await client.call_tool("Echo", {"message": "second",
                                                          "conversation_id": conversation})
                assert (retried.is_error, text(retried)) == (False, "Your second, answered.")
                assert retried.structured_content == {
                    "conversation_id": conversation, "status": "waiting",
                    "waiting_for": {"type": "user", "prompt": None}}

        asyncio.run(main())
        assert len(model.requests) == 3  # "third" made no model call
        said = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
        assert said == ["first", "second"]  # the retried message, once


def _keyed(key: str) -> dict[str, Any]:
    return {"idempotencyKey": key}


def _stored(url: str, conversation_id: str) -> list[tuple[str, str]]:
    async def read() -> list[tuple[str, str]]:
        store = open_store(url)
        await store.open()
        try:
            stored = await store.load(conversation_id)
            assert stored is not None
            return [(m.role, m.text) for m in stored.messages]
        finally:
            await store.close()

    return asyncio.run(read())


def test_idempotency_keys_in_meta_over_stdio(tmp_path: Path) -> None:
    """A call's ``_meta.idempotencyKey``: a repeat answers as the first did and runs nothing
    (the store holds each message once); the same key with other arguments is a tool error
    result; a key is scoped per conversation, and a call that starts one finds, repeated, the
    conversation it started; a failed turn's answer is kept too; a call refused before any
    turn leaves its key unused."""
    url = f"sqlite:///{tmp_path / 'keys.db'}"

    async def main() -> tuple[str, str]:
        async with Client(stdio("--store", url)) as client:
            first = await client.call_tool(TOOL, {"message": "hello"}, meta=_keyed("k1"))
            again = await client.call_tool(TOOL, {"message": "hello"}, meta=_keyed("k1"))
            conversation = first.structured_content["conversation_id"]
            assert (text(again), again.structured_content) == (
                "Hello!\n\nDone: noted", first.structured_content)
            other = await client.call_tool(TOOL, {"message": "hi"}, meta=_keyed("k1"))
            assert (other.is_error, text(other)) == (True, (
                "this idempotency key was used with other arguments: use a new key for "
                "another call"))
            fresh = await client.call_tool(TOOL, {"message": "hello"}, meta=_keyed("k2"))
            assert fresh.structured_content["conversation_id"] != conversation

            said = {"message": "again", "conversation_id": conversation}
            for _ in range(2):
                kept = await client.call_tool(TOOL, said, meta=_keyed("k4"))
                assert (kept.is_error, text(kept)) == (False, "You said 'again'")

            failing = await client.call_tool(TOOL, {"message": "fail"})
            broken = text(failing).split("(conversation '")[1].split("'")[0]
            refused = await client.call_tool(TOOL, {"message": "other",
                                                    "conversation_id": broken},
                                             meta=_keyed("k3"))
            assert text(refused).startswith(f"conversation {broken!r} waits for a retry")
            retried = {"message": "fail", "conversation_id": broken}
            first_retry = await client.call_tool(TOOL, retried, meta=_keyed("k3"))  # unused
            assert (first_retry.is_error, text(first_retry)) == (True, (
                "the bot's model call failed; the conversation waits for a retry "
                f"(conversation {broken!r}): call the tool again with this conversation_id "
                "and the same message to retry"))
            repeat = await client.call_tool(TOOL, retried, meta=_keyed("k3"))
            assert (repeat.is_error, text(repeat)) == (True, text(first_retry))
            return conversation, broken

    conversation, broken = asyncio.run(main())
    assert conversation.startswith("k")  # drawn from the caller and the key
    assert _stored(url, conversation) == [
        ("user", "hello"), ("assistant", "Hello!"), ("tool", "noted"),
        ("assistant", "Done: noted"), ("user", "again"), ("assistant", "You said 'again'")]
    assert [m for m in _stored(url, broken) if m[0] == "user"] == [("user", "fail")]
