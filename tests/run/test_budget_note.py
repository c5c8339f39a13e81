"""``Limits(tell_model=True)``: each model call is sent a system note of what is left of each
limit that is set, counted over the whole conversation (after a resume, on a served conversation
rebuilt by another app); the note is sent, never stored, and a ContextWindow keeps room for it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from weather_tools import chat, chat_loop

from convo import (
    ContextWindow,
    DefinitionError,
    Limits,
    Message,
    OpenAIModel,
    Runner,
    ScriptedInterface,
    ToolCall,
)
from convo._resume import resume
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.testing import OpenAIServer
from convo.tools import FinishTool, tool


@tool
def look_up(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def _template() -> LinearTemplate:
    return chat_loop(look_up, FinishTool())


class Recorder:
    """A model that looks an order up when asked, then answers; records what it is sent and
    reports 100 prompt and 20 completion tokens a call."""

    def __init__(self) -> None:
        self.calls: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> Message:
        self.calls.append(list(messages))
        usage = {"usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
        said = [m for m in messages if m.role != "system"][-1]
        if said.role == "user" and said.content.startswith("order "):
            order = said.content[6:]
            call = ToolCall(f"call_{order}", "look_up", {"order": order})
            return Message("assistant", "", tool_calls=[call], metadata=usage)
        return Message("assistant", f"ok: {said.content}", metadata=usage)


def _model(recorder: Recorder) -> FunctionModel:
    return FunctionModel(recorder)


LIMITS = Limits(model_calls=6, tool_calls=3, total_tokens=1000, tell_model=True)


def _notes(calls: list[list[Message]]) -> list[str]:
    """The last message of each call, which must be the note."""
    assert all(call[-1].role == "system" for call in calls)
    return [call[-1].content for call in calls]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_each_call_is_told_what_is_left_and_nothing_is_stored(mode: str) -> None:
    recorder = Recorder()
    runner = Runner(_model(recorder), _template(), ScriptedInterface(["order A1", "thanks"]),
                    limits=LIMITS)
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    assert _notes(recorder.calls) == [
        "Budget: 5 of 6 model calls left; 3 of 3 tool calls left; 1,000 of 1,000 total tokens "
        "left.",
        "Budget: 4 of 6 model calls left; 2 of 3 tool calls left; 880 of 1,000 total tokens "
        "left.",
        "Budget: 3 of 6 model calls left; 2 of 3 tool calls left; 760 of 1,000 total tokens "
        "left.",
    ]
    # What comes before the note is the history as it was, and the history holds no note.
    assert recorder.calls[1][:-1] == session.messages[:4]
    assert not any(m.content.startswith("Budget:") for m in session.messages)
    assert [m.role for m in session.messages] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert session.outcome is not None and session.outcome.model_calls == 3


def test_the_counts_cover_the_conversation_after_a_resume() -> None:
    first = Runner(_model(Recorder()), _template(), ScriptedInterface(["order A1"]),
                   limits=LIMITS).run()
    assert first.outcome is not None and first.outcome.status == "stopped"
    template, session = resume(_template(), first)
    recorder = Recorder()
    again = Runner(_model(recorder), template, ScriptedInterface(["order B2", "thanks"]),
                   limits=LIMITS).run(session)
    # Two calls and a tool call were made before the resume (240 tokens reported).
    assert _notes(recorder.calls) == [
        "Budget: 3 of 6 model calls left; 2 of 3 tool calls left; 760 of 1,000 total tokens "
        "left.",
        "Budget: 2 of 6 model calls left; 1 of 3 tool calls left; 640 of 1,000 total tokens "
        "left.",
        "Budget: 1 of 6 model calls left; 1 of 3 tool calls left; 520 of 1,000 total tokens "
        "left.",
    ]
    assert again.outcome is not None and again.outcome.model_calls == 5
    assert not any(m.content.startswith("Budget:") for m in again.messages)


def test_a_served_conversation_rebuilt_by_another_app_counts_it_all(tmp_path: Path) -> None:
    recorder = Recorder()
    store = f"sqlite:///{tmp_path / 'b.db'}"
    apps = [create_app(_template(), _model(recorder), store=store, limits=LIMITS)
            for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        one.post(f"/api/conversations/{cid}/messages", json={"content": "order A1"})
        body = two.post(f"/api/conversations/{cid}/messages", json={"content": "hi"}).json()
    assert _notes(recorder.calls)[2] == (
        "Budget: 3 of 6 model calls left; 2 of 3 tool calls left; 760 of 1,000 total tokens "
        "left.")
    assert len(recorder.calls) == 3
    assert [m["content"] for m in body["messages"]][-2:] == ["hi", "ok: hi"]
    assert not any(m["content"].startswith("Budget:") for m in body["messages"])


def test_only_the_limits_that_are_set_are_told_and_off_by_default() -> None:
    recorder = Recorder()
    Runner(_model(recorder), _template(), ScriptedInterface(["hi"]),
           limits={"input_tokens": 5000, "output_tokens": 40, "tell_model": True}).run()
    assert _notes(recorder.calls) == [
        "Budget: 5,000 of 5,000 input tokens left; 40 of 40 output tokens left."]

    quiet = Recorder()
    Runner(_model(quiet), _template(), ScriptedInterface(["hi"]),
           limits=Limits(model_calls=3)).run()
    assert [m.content for m in quiet.calls[0]] == ["Be brief.", "hi"]

    nothing_set = Recorder()
    Runner(_model(nothing_set), _template(), ScriptedInterface(["hi"]),
           limits=Limits(tell_model=True)).run()
    assert [m.content for m in nothing_set.calls[0]] == ["Be brief.", "hi"]


def test_the_note_goes_over_the_wire_last() -> None:
    # The fake server reports a token per word, plus one per message.
    template = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("hello there"),
                               ToolingTemplate([FinishTool()]), UserTemplate("and again"),
                               ToolingTemplate([FinishTool()])])
    with OpenAIServer(["Hi. {finish()}", "Again. {finish()}"]) as server:
        model = OpenAIModel("m", base_url=server.base_url, max_retries=0)
        session = Runner(model, template, limits=Limits(model_calls=4, total_tokens=500,
                                                        tell_model=True)).run()
        model.close()
        sent = [r["messages"] for r in server.requests]
    assert session.outcome is not None and session.outcome.status == "completed"
    assert sent[0] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello there"},
        {"role": "system", "content": "Budget: 3 of 4 model calls left; 500 of 500 total "
                                      "tokens left."},
    ]
    first = session.messages[2].metadata["usage"]["total_tokens"]
    assert first > 0
    assert sent[1][-1] == {"role": "system", "content": f"Budget: 2 of 4 model calls left; "
                                                        f"{500 - first} of 500 total tokens left."}
    assert [m["content"] for m in sent[1][:-1]] == [m.content for m in session.messages[:5]]


def test_a_window_keeps_room_for_the_note_and_summaries_get_none() -> None:
    calls: list[list[Message]] = []

    def model(messages: Sequence[Message], tools: Any) -> str:
        calls.append(list(messages))
        if messages[0].content.startswith("You summarise"):
            return "They chatted."
        return "Sure. " * 12

    template = chat("Be brief.", turns=20)
    window = ContextWindow(300, summarize=True)
    said = [f"question {i}: " + "tell me more " * 6 for i in range(20)]
    session = Runner(FunctionModel(model), template, ScriptedInterface(said), context=window,
                     limits=Limits(model_calls=100, total_tokens=10**6, tell_model=True)).run()
    replies = [c for c in calls if not c[0].content.startswith("You summarise")]
    summaries = [c for c in calls if c[0].content.startswith("You summarise")]
    assert len(replies) == 20 and summaries
    assert all(c[-1].content.startswith("Budget: ") for c in replies)
    assert not any(m.content.startswith("Budget: ") for c in summaries for m in c)
    # The note is counted (without the room kept for it, calls were sent 303 tokens).
    assert max(window.estimate(c) for c in replies) <= 300
    assert session.outcome is not None and session.outcome.model_calls == len(calls)


def test_tell_model_must_be_a_bool() -> None:
    with pytest.raises(DefinitionError, match=r"Limits\(tell_model=...\) must be True or "
                                              r"False, got 'yes'"):
        Limits(model_calls=3, tell_model="yes")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="Runner: unknown limit 'tell'; the limits are "
                                              "model_calls, tool_calls, input_tokens, "
                                              "output_tokens, total_tokens \\(and the option "
                                              "tell_model\\)"):
        Runner(None, _template(), limits={"tell": True})
