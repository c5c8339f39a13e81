"""Record and replay: a real model's exchanges to a JSON file, and back as a model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from convo import Message, Runner, ScriptError, ToolCall
from convo.models import MockModel
from convo.templates import AssistantTemplate, LinearTemplate, SystemTemplate, UserTemplate
from convo.testing import RecordingModel, ReplayModel
from convo.testing._replay import load_recording, replay_or_record

TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add.",
                                           "parameters": {"type": "object", "properties": {}}}}]


def barista(order: str = "A latte, please.") -> LinearTemplate:
    return LinearTemplate([
        SystemTemplate("You are a barista."),
        UserTemplate(order),
        AssistantTemplate(),
        UserTemplate("How much?"),
        AssistantTemplate(),
    ])


def test_a_recording_against_the_fake_server_replays_without_it(tmp_path: Path) -> None:
    from convo import OpenAIModel
    from convo.testing import OpenAIServer

    path = tmp_path / "barista.json"
    with OpenAIServer(["One latte.", "3 euros."]) as server, OpenAIModel(
        base_url=server.base_url, api_key="test", max_retries=0
    ) as real:
        recorded = Runner(RecordingModel(real, path), barista()).run()
        assert len(server.requests) == 2
    # the server is gone: the replay alone answers
    replay = ReplayModel(path)
    replayed = Runner(replay, barista()).run()
    assert replayed.messages == recorded.messages
    assert [m.content for m in replayed.messages[2::2]] == ["One latte.", "3 euros."]
    assert replayed.outcome is not None and recorded.outcome is not None
    assert replayed.outcome.usage == recorded.outcome.usage
    replay.assert_complete()


def test_a_changed_template_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "barista.json"
    Runner(RecordingModel(MockModel(["One latte.", "3 euros."]), path), barista()).run()

    with pytest.raises(ScriptError) as info:
        Runner(ReplayModel(path), barista("A mocha, please.")).run()
    assert str(info.value) == (
        f"ReplayModel({str(path)!r}), model call 1: the request differs from every unused "
        "recorded exchange (re-record if the change is intended). Closest is exchange 1 of 2; "
        "- recorded, + requested now:\n"
        "--- recorded exchange 1\n"
        "+++ model call 1\n"
        "@@ -1,2 +1,2 @@\n"
        " [0] system: You are a barista.\n"
        "-[1] user: A latte, please.\n"
        "+[1] user: A mocha, please."
    )


def test_the_recording_is_readable_json_written_as_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    reply = Message("assistant", "Sure.", metadata={"usage": {"total_tokens": 7}})
    model = RecordingModel(MockModel([reply, "Done."]), path)
    history = [Message("user", "hi", metadata={"note": "not sent to the model"})]

    model.complete(history, TOOLS)
    assert len(load_recording(path)) == 1  # flushed after the first call
    model.complete([*history, reply, Message("user", "more")])

    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "format": "convo.recording",\n  "version": 1,')
    doc = json.loads(text)
    assert doc["exchanges"][0] == {
        "request": {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS},
        "reply": {"role": "assistant", "content": "Sure.",
                  "metadata": {"usage": {"total_tokens": 7}}},
    }
    assert [m["content"] for m in doc["exchanges"][1]["request"]["messages"]] == [
        "hi", "Sure.", "more"]
    assert doc["exchanges"][1]["reply"] == {"role": "assistant", "content": "Done."}


def test_tool_calls_and_their_ids_replay_exactly(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    recorder = RecordingModel(MockModel(["{add(a=1, b=2)}", "It is 3."]), path)
    first = recorder.complete([Message("user", "1+2?")], TOOLS)
    history = [Message("user", "1+2?"), first,
               Message("tool", "3", tool_call_id=first.tool_calls[0].id)]
    recorder.complete(history, TOOLS)

    replay = ReplayModel(path)
    again = replay.complete([Message("user", "1+2?")], TOOLS)
    assert again.tool_calls == (ToolCall("call_1", "add", {"a": 1, "b": 2}),)
    assert replay.complete(history, TOOLS) == Message("assistant", "It is 3.")
    replay.assert_complete()


def test_changed_tools_show_in_the_diff(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    RecordingModel(MockModel(["ok"]), path).complete([Message("user", "hi")], TOOLS)
    with pytest.raises(ScriptError, match=r"\n-tool add: .*\n\+tool add: .*Adds two"):
        changed = [{**TOOLS[0], "function": {**TOOLS[0]["function"],
                                             "description": "Adds two."}}]
        ReplayModel(path).complete([Message("user", "hi")], changed)


def test_asking_past_the_recording_fails(tmp_path: Path) -> None:
    path = tmp_path / "short.json"
    RecordingModel(MockModel(["Hello."]), path).complete([Message("user", "hi")])
    replay = ReplayModel(path)
    replay.complete([Message("user", "hi")])
    with pytest.raises(ScriptError) as info:
        replay.complete([Message("user", "hi"), Message("assistant", "Hello."),
                         Message("user", "and?")])
    assert str(info.value) == (
        f"ReplayModel({str(path)!r}), model call 2: the recording has 1 exchanges and all were "
        "replayed; nothing recorded for this request:\n"
        "[0] user: hi\n[1] assistant: Hello.\n[2] user: and?"
    )


def test_assert_complete_names_the_first_unreplayed_exchange(tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    Runner(RecordingModel(MockModel(["a", "b"]), path), barista()).run()
    replay = ReplayModel(path)
    with pytest.raises(AssertionError, match=r"2 of 2 recorded exchanges were not replayed "
                                             r"\(first: exchange 1, after 0 model calls\)"):
        replay.assert_complete()


def test_async_record_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "async.json"
    recorded = asyncio.run(
        Runner(RecordingModel(MockModel(["x", "y"]), path), barista()).arun())
    deltas: list[str] = []
    replayed = Runner(ReplayModel(path), barista(),
                      on_event=lambda e: deltas.append(getattr(e, "text", ""))).run()
    assert replayed.messages == recorded.messages
    assert "x" in deltas and "y" in deltas  # the replay hands the text on as one delta


def test_replay_or_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVO_RECORD", raising=False)
    path = tmp_path / "cassette.json"
    first = replay_or_record(path, MockModel(["hello"]))
    assert isinstance(first, RecordingModel)
    Runner(first, LinearTemplate([UserTemplate("hi"), AssistantTemplate()])).run()
    assert isinstance(replay_or_record(path), ReplayModel)
    monkeypatch.setenv("CONVO_RECORD", "1")
    assert isinstance(replay_or_record(path, MockModel([])), RecordingModel)
    monkeypatch.delenv("CONVO_RECORD")
    with pytest.raises(ScriptError, match=r"no recording at .* and no model to record one"):
        replay_or_record(tmp_path / "missing.json")


def test_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text('{"format": "convo.session", "version": 1}')
    with pytest.raises(ValueError, match="not a convo recording"):
        ReplayModel(path)
    path.write_text('{"format": "convo.recording", "version": 99}')
    with pytest.raises(ValueError, match="version 99 is newer than this convo reads"):
        ReplayModel(path)
