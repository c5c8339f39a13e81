"""Parts on the Chat Completions wire: the pure converter, and the whole stack (Runner ->
OpenAIModel -> the real openai SDK -> HTTP -> OpenAIServer) with exact request bodies."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from parts_files import pdf, png, wav

from convo import (
    Audio,
    DefinitionError,
    Document,
    Image,
    Message,
    ModelError,
    OpenAIModel,
    Runner,
    Session,
    Text,
    ToolCall,
)
from convo.models._openai.text_protocol import messages_for_text
from convo.models._openai.wire import messages_to_wire
from convo.templates import AssistantTemplate, LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import OpenAIServer
from convo.tools import tool

PNG = png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def model(server: OpenAIServer, **options: object) -> OpenAIModel:
    return OpenAIModel("vision-model", base_url=server.base_url, api_key="test", **options)


def test_each_part_as_chat_completions_takes_it() -> None:
    pdf_bytes, wav_bytes = pdf(), wav()
    message = Message("user", [
        Text("Compare these."), Image(PNG, media_type="image/png", detail="high"),
        Image(url="https://example.com/cat.jpg"),
        Audio(wav_bytes, media_type="audio/wav"), Audio(b"ID3", media_type="audio/mpeg"),
        Document(pdf_bytes, media_type="application/pdf", filename="report.pdf"),
    ])
    assert messages_to_wire([message]) == [{"role": "user", "content": [
        {"type": "text", "text": "Compare these."},
        {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "input_audio", "input_audio": {
            "data": base64.b64encode(wav_bytes).decode(), "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        {"type": "file", "file": {
            "file_data": "data:application/pdf;base64," + base64.b64encode(pdf_bytes).decode(),
            "filename": "report.pdf"}},
    ]}]


def test_text_messages_go_out_exactly_as_before() -> None:
    assert messages_to_wire([Message("system", "Be brief."), Message("user", "hi")]) == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


def test_parts_the_api_cannot_carry_are_model_errors_naming_them() -> None:
    doc = Message("user", [Text("read"), Document(url="https://example.com/a.pdf")])
    with pytest.raises(ModelError, match=r"^the Chat Completions API takes a file as inline "
                                         r"data, not a URL; message 2 has a Document part "
                                         r"with url='https://example.com/a.pdf'"):
        messages_to_wire([Message("user", "hi"), doc])
    ogg = Message("user", [Audio(b"OggS", media_type="audio/ogg", filename="a.ogg")])
    with pytest.raises(ModelError, match=r"takes audio as inline wav or mp3 data; message 1 "
                                         r"has an Audio part \(a.ogg\) with media type "
                                         r"'audio/ogg'"):
        messages_to_wire([ogg])
    system = Message("system", [Image(PNG, media_type="image/png", filename="logo.png")])
    with pytest.raises(ModelError, match=r"images, audio and files only in user messages; "
                                         r"message 1 \(system\) has a Image part \(logo.png\)"):
        messages_to_wire([system])


def test_a_tools_image_follows_the_tool_results_as_a_user_message() -> None:
    calls = (ToolCall("c1", "screenshot", {}), ToolCall("c2", "clock", {}))
    shot = Image(PNG, media_type="image/png", filename="screen.png")
    messages = [
        Message("user", "What is on my screen?"),
        Message("assistant", "", tool_calls=calls),
        Message("tool", [Text("Here it is."), shot], tool_call_id="c1", name="screenshot"),
        Message("tool", "12:00", tool_call_id="c2", name="clock"),
    ]
    wire = messages_to_wire(messages)
    assert wire[2:] == [
        {"role": "tool", "tool_call_id": "c1",
         "content": f"Here it is.\n[image: screen.png, {len(PNG)} B]"},
        {"role": "tool", "tool_call_id": "c2", "content": "12:00"},
        {"role": "user", "content": [
            {"type": "text", "text": "(returned by the tool screenshot)"},
            {"type": "image_url", "image_url": {"url": PNG_URL}}]},
    ]


def test_text_tool_format_sends_a_tools_image_with_its_response() -> None:
    shot = Image(PNG, media_type="image/png", filename="screen.png")
    out = messages_for_text([
        Message("user", "look"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "screenshot", {}),)),
        Message("tool", [shot], tool_call_id="c1", name="screenshot"),
    ], [])
    assert out[-1] == Message("user", [
        Text(f'<tool_response name="screenshot">\n[image: screen.png, {len(PNG)} B]\n'
             "</tool_response>"), shot])


def test_an_image_from_the_user_reaches_the_server(server: OpenAIServer) -> None:
    server.add("A small square.")
    asked = [Text("What is this?"), Image(PNG, media_type="image/png")]
    session = Runner(model(server), LinearTemplate([
        UserTemplate(asked), AssistantTemplate()])).run()
    assert session.messages[-1].content == "A small square."
    assert server.requests[0]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}}]}]


def test_streamed_too(server: OpenAIServer) -> None:
    server.add("Silence.")
    asked = [Audio(wav(), media_type="audio/wav"), Text("What do you hear?")]
    session = Runner(model(server, stream=True), LinearTemplate([
        UserTemplate(asked), AssistantTemplate()])).run()
    assert session.messages[-1].content == "Silence."
    sent = server.requests[0]["messages"][0]["content"]
    assert [p["type"] for p in sent] == ["input_audio", "text"]
    assert sent[0]["input_audio"]["format"] == "wav"


def test_a_part_the_api_cannot_carry_fails_before_anything_is_sent(
        server: OpenAIServer) -> None:
    asked = [Text("Summarise"), Document(url="https://example.com/a.pdf")]
    with pytest.raises(ModelError, match="takes a file as inline data, not a URL; message 1"):
        Runner(model(server), LinearTemplate([UserTemplate(asked), AssistantTemplate()])).run()
    assert server.requests == []


def test_a_user_template_attaches_files_by_path(server: OpenAIServer, tmp_path: Path) -> None:
    (tmp_path / "report.pdf").write_bytes(pdf())
    server.add("It says Hello.")
    template = UserTemplate(["Read {{ who }}'s file: ", tmp_path / "report.pdf"])
    Runner(model(server), LinearTemplate([template, AssistantTemplate()])).run(
        Session(state={"who": "Ann"}))
    sent = server.requests[0]["messages"][0]["content"]
    assert sent[0] == {"type": "text", "text": "Read Ann's file: "}
    assert sent[1]["file"]["filename"] == "report.pdf"
    assert sent[1]["file"]["file_data"].startswith("data:application/pdf;base64,JVBERi0x")


def test_a_missing_file_in_a_user_template_is_a_definition_error(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"UserTemplate.*: cannot attach .*nothing.png: "):
        UserTemplate(["see", tmp_path / "nothing.png"])


@tool
def screenshot() -> list[object]:
    """Take a screenshot."""
    return ["Your screen:", Image(PNG, media_type="image/png", filename="screen.png")]


def test_a_tools_image_reaches_the_model_in_its_next_call(server: OpenAIServer) -> None:
    server.add("{screenshot()}", "A tiny picture.")
    session = Runner(model(server), LinearTemplate([
        UserTemplate("What is on my screen?"), ToolingTemplate([screenshot])])).run()
    assert session.messages[-1].content == "A tiny picture."
    tool_message = session.messages[2]
    assert tool_message.role == "tool"
    assert tool_message.content == (Text("Your screen:"), Image(
        PNG, media_type="image/png", filename="screen.png"))
    call_id = session.messages[1].tool_calls[0].id
    assert server.requests[1]["messages"][2:] == [
        {"role": "tool", "tool_call_id": call_id,
         "content": f"Your screen:\n[image: screen.png, {len(PNG)} B]"},
        {"role": "user", "content": [
            {"type": "text", "text": "(returned by the tool screenshot)"},
            {"type": "image_url", "image_url": {"url": PNG_URL}}]},
    ]
