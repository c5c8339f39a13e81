"""Parts (API §16) as values: constructors, JSON, text, Jinja, estimates, screens, records."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from parts_files import pdf, png, wav

from convo import (
    Audio,
    Document,
    Image,
    Message,
    Runner,
    ScriptedInterface,
    Session,
    Text,
    load_transcript,
)
from convo._context import IMAGE_TOKENS, MESSAGE_OVERHEAD, estimate_message
from convo._parts import PartError, describe, from_path, part_from_dict, shown
from convo._rendering import environment
from convo._transcript import TranscriptWriter
from convo.models import MockModel
from convo.templates import AssistantTemplate, LinearTemplate, UserTemplate
from convo.testing import assert_matches_snapshot
from convo.testing.strategies import contents, messages

PNG = png()


def test_text_only_content_stays_a_str() -> None:
    assert Message("user", "hi").content == "hi"
    assert Message("user", [Text("a"), "b", Text("c")]).content == "abc"
    assert Message("user", []).content == ""
    assert Message("user", None).content == ""


def test_parts_content_is_a_tuple_and_text_joins_text_parts() -> None:
    m = Message("user", [Text("What is "), Image(PNG, media_type="image/png"), Text("this?")])
    assert isinstance(m.content, tuple) and len(m.content) == 3
    assert m.text == "What is this?"
    assert m.has_parts
    assert Message("user", Image(PNG, media_type="image/png")).text == ""
    assert Message("assistant", "plain").text == "plain"


def test_content_of_another_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"content part 2 must be a Text, Image, Audio or "
                                        r"Document \(or a str\); got int"):
        Message("user", ["a", 3])
    with pytest.raises(TypeError, match="got bytes"):
        Message("user", b"raw")


def test_a_binary_part_needs_data_or_url_not_both() -> None:
    with pytest.raises(ValueError, match=r"Image needs exactly one of data= .bytes. or url=; "
                                         "got neither"):
        Image()
    with pytest.raises(ValueError, match="got both"):
        Document(b"x", url="https://example.com/a.pdf")


def test_json_of_each_part() -> None:
    encoded = base64.b64encode(PNG).decode()
    m = Message("user", [
        Text("look"), Image(PNG, media_type="image/png", detail="low"),
        Image(url="https://example.com/cat.jpg"),
        Document(b"%PDF", media_type="application/pdf", filename="a.pdf"),
        Audio(b"RIFF", media_type="audio/wav"),
    ])
    assert m.to_dict() == {"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "media_type": "image/png", "data": encoded, "detail": "low"},
        {"type": "image", "url": "https://example.com/cat.jpg"},
        {"type": "document", "media_type": "application/pdf", "data": "JVBERg==",
         "filename": "a.pdf"},
        {"type": "audio", "media_type": "audio/wav", "data": "UklGRg=="},
    ]}
    assert Message.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_text_message_json_is_unchanged() -> None:
    assert Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}
    assert Message.from_dict({"role": "user", "content": "hi"}) == Message("user", "hi")


def test_malformed_part_json_names_the_part() -> None:
    with pytest.raises(PartError, match=r"content part 2: expected a 'type' of 'text', "
                                        r"'image', 'audio' or 'document'; got 'video'"):
        Message.from_dict({"role": "user", "content": [{"type": "text", "text": "a"},
                                                       {"type": "video", "url": "x"}]})
    with pytest.raises(PartError, match="content part 1: 'data' of the image part is not "
                                        "valid base64"):
        part_from_dict({"type": "image", "media_type": "image/png", "data": "!!notbase64"})
    with pytest.raises(PartError, match=r"content part 1: a document part needs exactly one "
                                        r"of .data. .base64. or .url."):
        part_from_dict({"type": "document"})


def test_from_path_guesses_media_types(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(pdf())
    (tmp_path / "a.wav").write_bytes(wav())
    (tmp_path / "b.mp3").write_bytes(b"ID3")
    image = Image.from_path(tmp_path / "shot.png")
    assert (image.data, image.media_type, image.filename) == (PNG, "image/png", "shot.png")
    document = Document.from_path(tmp_path / "report.pdf")
    assert (document.media_type, document.filename) == ("application/pdf", "report.pdf")
    assert Audio.from_path(tmp_path / "a.wav").media_type == "audio/wav"
    assert Audio.from_path(tmp_path / "b.mp3").media_type == "audio/mpeg"
    assert type(from_path(tmp_path / "shot.png")) is Image
    assert type(from_path(tmp_path / "a.wav")) is Audio
    assert type(from_path(tmp_path / "report.pdf")) is Document


def test_from_path_over_the_limit_names_the_file_and_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(b"\0" * 2048)
    with pytest.raises(PartError) as caught:
        Image.from_path(path, max_bytes=1000)
    assert str(caught.value) == (f"{path} is 2 kB (2048 bytes), over the limit of 1 kB "
                                 f"(1000 bytes) for an attachment")


def test_jinja_sees_the_text_of_a_parts_message() -> None:
    m = Message("user", [Text("hello "), Image(PNG, media_type="image/png"), Text("there")])
    source = "{{ last_message.content }}|{{ messages[0].content }}|{{ messages[0].text }}"
    out = environment().from_string(source).render(last_message=m, messages=[m])
    assert out == "hello there|hello there|hello there"


def test_a_parts_message_is_estimated_by_its_parts() -> None:
    image = Image(PNG, media_type="image/png")
    assert estimate_message(Message("user", [Text("abcd"), image])) == (
        MESSAGE_OVERHEAD + 1 + IMAGE_TOKENS)
    low = Image(PNG, media_type="image/png", detail="low")
    assert estimate_message(Message("user", [low])) == MESSAGE_OVERHEAD + 85
    assert estimate_message(Message("user", [Document(b"x" * 160)])) == MESSAGE_OVERHEAD + 10


def test_screens_show_a_placeholder_never_the_data() -> None:
    image = Image(b"\0" * 212_000, media_type="image/png", filename="screenshot.png")
    assert describe(image) == "[image: screenshot.png, 212 kB]"
    assert describe(Image(url="https://example.com/x.jpg")) == "[image: https://example.com/x.jpg]"
    assert shown((Text("What is this?"), image)) == (
        "What is this?\n[image: screenshot.png, 212 kB]")


def test_a_snapshot_shows_parts_as_placeholders(tmp_path: Path) -> None:
    session = Session([Message("user", [Text("see"), Image(PNG, media_type="image/png",
                                                           filename="a.png")])])
    assert_matches_snapshot(session, "s", directory=tmp_path, update=True)
    lines = (tmp_path / "s.txt").read_text().splitlines()
    assert lines[-2:] == ["user: see", f"  | [image: a.png, {len(PNG)} B]"]
    assert_matches_snapshot(session, "s", directory=tmp_path, update=False)


def test_a_transcript_with_an_image_replays_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    image = Image(PNG, media_type="image/png", filename="a.png")
    asked = Message("user", [Text("what is it?"), image])
    first = MockModel(["A red square."])
    tree = LinearTemplate([UserTemplate(), AssistantTemplate(), UserTemplate(),
                           AssistantTemplate()])
    session = Session()
    writer = TranscriptWriter.create(path, session)
    Runner(first, tree, _Once(asked.content), on_event=writer).run(session)
    writer.close()
    assert first.calls[0].messages[0] == asked
    saved = load_transcript(path)
    assert saved.messages[:2] == [asked, Message("assistant", "A red square.",
                                                 metadata=saved.messages[1].metadata)]
    # Resumed: the saved image answers the first turn again; the model sees it in its call.
    again = MockModel(["You are welcome."])
    resumed = Runner(again, tree, ScriptedInterface(["thanks"])).resume(path)
    assert [m.text for m in resumed.messages] == [
        "what is it?", "A red square.", "thanks", "You are welcome."]
    assert resumed.messages[0] == asked
    assert len(again.calls) == 1 and again.calls[0].messages[0] == asked


class _Once(ScriptedInterface):
    """Answers once with ``content``, then ends the run (EOF), like a person who leaves."""

    def __init__(self, content: object) -> None:
        super().__init__([])
        self.content: object = content

    def ask(self, session: Session, instruction: str | None, default: str | None) -> object:
        if self.content is None:
            raise EOFError
        content, self.content = self.content, None
        return content


@given(messages(("user",)))
def test_user_messages_with_parts_round_trip(message: Message) -> None:
    assert Message.from_dict(json.loads(json.dumps(message.to_dict()))) == message


@given(contents())
def test_contents_are_text_or_have_a_binary_part(content: object) -> None:
    m = Message("user", content)
    assert isinstance(m.content, str) or any(not isinstance(p, Text) for p in m.content)
