"""What AnthropicModel keeps on the way through the rest of convo: thinking blocks and their
signatures survive a recording and its replay, a served conversation rebuilt on another worker
and `convo chat -c`, each sent back unchanged and in place (read from AnthropicServer's
recorded requests); streamed thinking reaches a served client as `reasoning` events."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from message_json import streamed
from starlette.testclient import TestClient
from terminal_harness import env

from convo import Message, Runner, Session, ToolCall
from convo.models import AnthropicModel
from convo.serve import create_app
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.testing import AnthropicServer, RecordingModel, ReplayModel
from convo.tools import FinishTool, tool

__all__ = ["env"]  # the fixture

THOUGHT = {"type": "thinking", "thinking": "The user wants a refund: ask first.",
           "signature": "sig-A/+=="}
LATER = {"type": "redacted_thinking", "data": "opaque-B"}
EPH = {"type": "ephemeral"}
refunded: list[str] = []


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: Its number.
    """
    refunded.append(order)
    return f"refunded {order}"


def desk() -> LinearTemplate:
    return LinearTemplate([SystemTemplate("You run a shop."), LoopTemplate(
        [UserTemplate(), ToolingTemplate([refund, FinishTool()])])])


@tool
def refund_now(order: str) -> str:
    """Refund an order at once.

    Args:
        order: Its number.
    """
    return f"refunded {order}"


def asks_to(name: str) -> Message:
    return Message.assistant("Let me refund it.", [ToolCall("toolu_1", name, {"order": "A1"})],
                             reasoning=[THOUGHT])


def claude(server: AnthropicServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-x", base_url=server.base_url, api_key="k", max_retries=0,
                          thinking={"type": "enabled", "budget_tokens": 1024}, **kw)


def asked(name: str) -> dict[str, Any]:
    """The assistant turn of ``asks_to(name)`` as it must be sent back: thinking first."""
    return {"role": "assistant", "content": [
        THOUGHT, {"type": "text", "text": "Let me refund it."},
        {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"order": "A1"}}]}


def _bare(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


def test_a_recording_replays_the_thinking_and_a_live_model_goes_on_from_it(tmp_path: Path
                                                                           ) -> None:
    path = tmp_path / "desk.json"
    template = LinearTemplate([UserTemplate("Refund A1"), ToolingTemplate([refund_now])])
    with AnthropicServer([asks_to("refund_now"), Message.assistant("Done.", reasoning=[LATER])]
                         ) as server, claude(server) as model:
        recorded = Runner(RecordingModel(model, path), template).run()
    replay = ReplayModel(path)
    replayed = Runner(replay, template).run()
    replay.assert_complete()
    assert replayed.messages == recorded.messages
    assert replayed.messages[1].reasoning == (THOUGHT,)
    assert replayed.messages[-1].reasoning == (LATER,)
    assert replayed.outcome is not None and recorded.outcome is not None
    assert replayed.outcome.usage == recorded.outcome.usage
    assert replayed.outcome.usage.cache_read_tokens > 0  # cache figures replayed too
    # The replayed conversation goes on against the API with its thinking sent back as it came.
    with AnthropicServer(["You are welcome."]) as server, claude(server) as model:
        more = LinearTemplate([UserTemplate("Thanks"), ToolingTemplate([refund_now])])
        Runner(model, more).run(Session.from_json(replayed.to_json()))
    sent = server.requests[0]["messages"]
    assert sent[1] == asked("refund_now")
    assert sent[3] == {"role": "assistant", "content": [LATER, {"type": "text",
                                                                "text": "Done."}]}


@pytest.mark.parametrize("stream", [False, True])
def test_a_served_rebuild_sends_the_thinking_back_unchanged_in_place(tmp_path: Path,
                                                                     stream: bool) -> None:
    refunded.clear()
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with AnthropicServer([asks_to("refund"), Message.assistant("Refunded.", reasoning=[LATER]),
                          "You are welcome."]) as server, \
            claude(server, stream=stream) as first_model, \
            claude(server, stream=stream) as second_model:
        one_app = create_app(desk(), first_model, store=store)
        two_app = create_app(desk(), second_model, store=store)
        with TestClient(one_app) as one, TestClient(two_app) as two:
            cid = one.post("/api/conversations", json={}).json()["id"]
            url = f"/api/conversations/{cid}"
            waiting = one.post(f"{url}/messages", json={"content": "Refund A1"}).json()
            assert waiting["waiting_for"]["type"] == "approval"
            # The other worker has never seen it: it rebuilds it from the store.
            done = two.post(f"{url}/approvals", json={"decisions": [
                {"call_id": "toolu_1", "approve": True}]})
            assert done.status_code == 200, done.text
            # Back on the first worker, whose copy is stale: rebuilt again.
            again = one.post(f"{url}/messages", json={"content": "Thanks"})
            assert again.status_code == 200, again.text
    assert refunded == ["A1"]
    after_tool, after_thanks = server.requests[1]["messages"], server.requests[2]["messages"]
    assert after_tool[1] == asked("refund")
    assert after_thanks[1] == asked("refund")
    assert after_thanks[3]["content"][0] == LATER
    assert _bare(after_thanks[3]["content"]) == [LATER, {"type": "text", "text": "Refunded."}]


def test_streamed_thinking_reaches_a_served_client_as_reasoning_events() -> None:
    template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])
    with AnthropicServer([Message.assistant("Sunny in Oslo.", reasoning=[THOUGHT])]
                         ) as server, claude(server, stream=True) as model:
        with TestClient(create_app(template, model)) as client:
            events = streamed(client, "Oslo?")
    names = [name for name, _ in events]
    thinking = [data["text"] for name, data in events if name == "reasoning"]
    assert "".join(thinking) == THOUGHT["thinking"] and len(thinking) > 1
    # thinking first, then the text, then the reply itself
    assert names.index("delta") > max(i for i, n in enumerate(names) if n == "reasoning")
    assert "".join(d["text"] for n, d in events if n == "delta") == "Sunny in Oslo."
    assert events[-2] == ("message", events[-2][1]) and \
        events[-2][1]["content"] == "Sunny in Oslo."


def _chat(*args: str, env: dict[str, str], stdin: str) -> subprocess.CompletedProcess[str]:
    # importing the anthropic SDK alone takes seconds on a busy machine: a generous timeout
    return subprocess.run([sys.executable, "-m", "convo", "chat", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_convo_chat_continue_sends_the_thinking_back_unchanged(env: dict[str, str]) -> None:
    env.update(ANTHROPIC_API_KEY="k")
    with AnthropicServer([Message.assistant("Hello!", reasoning=[THOUGHT]), "Again."]
                         ) as server:
        args = ("--model", "anthropic:claude-x", "--base-url", server.base_url, "--no-stream")
        first = _chat(*args, env=env, stdin="Hi\n")
        assert first.returncode == 0, first.stderr
        again = _chat("-c", *args, env=env, stdin="And now?\n")
        assert again.returncode == 0, again.stderr
    assert "Again." in again.stdout
    sent = server.requests[1]["messages"]
    assert sent[:2] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                        {"role": "assistant", "content": [
                            THOUGHT, {"type": "text", "text": "Hello!"}]}]
