"""AG-UI user messages with images, sounds and documents (API.md §16, §24): AG-UI 1.0's
``image``/``audio``/``document`` parts (a ``data`` or ``url`` source) and the older ``binary``
part become convo's parts — stored, shown by the native API, sent to the model — and come back
in ``MESSAGES_SNAPSHOT`` as AG-UI parts; what convo cannot read is 400 naming the part. The
inputs are built with ``ag_ui.core``'s own models, and every event is parsed strictly."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest
from ag_ui.core import (
    AudioPart,
    DataSource,
    DocumentPart,
    ImagePart,
    RunAgentInput,
    TextPart,
    UrlSource,
    UserMessage,
)
from agui_kit import post_run, validate
from serve_kit import TEMPLATE
from starlette.testclient import TestClient

from convo import Audio, Document, FunctionModel, Image, Message, Text
from convo.serve import create_app

PNG = b"\x89PNG\r\n\x1a\n-a-tiny-image"
WAV = b"RIFF-a-tiny-sound"


def body(thread: str, run: str, *messages: UserMessage) -> dict[str, Any]:
    return RunAgentInput(thread_id=thread, run_id=run, state={}, tools=[], context=[],
                         forwarded_props={}, messages=list(messages)).model_dump(
        by_alias=True, exclude_none=True, mode="json")


def picture(message_id: str) -> UserMessage:
    return UserMessage(id=message_id, content=[
        TextPart(text="What is in these?"),
        ImagePart(source=DataSource(value=base64.b64encode(PNG).decode(), mime_type="image/png")),
        AudioPart(source=DataSource(value=base64.b64encode(WAV).decode(), mime_type="audio/wav")),
        DocumentPart(source=UrlSource(value="https://example.com/a.pdf",
                                      mime_type="application/pdf"))])


class Seen:
    def __init__(self) -> None:
        self.last: Message | None = None

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        self.last = messages[-1]
        return "An image, a sound and a document."


def test_parts_are_stored_sent_to_the_model_and_snapshotted(store_url: str) -> None:
    seen = Seen()
    with TestClient(create_app(TEMPLATE, FunctionModel(seen), store=store_url)) as client:
        events = post_run(client, body("t", "r1", picture("u1")))
        stored = client.get("/api/conversations/t").json()["messages"]
        later = post_run(client, body("t", "r2"))  # a client that lacks the messages
    assert validate(events) == [] and validate(later) == []
    assert seen.last is not None and seen.last.content == (
        Text("What is in these?"), Image(PNG, media_type="image/png"),
        Audio(WAV, media_type="audio/wav"),
        Document(url="https://example.com/a.pdf", media_type="application/pdf"))
    assert stored[1]["id"] == "u1" and stored[1]["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
        {"type": "audio", "media_type": "audio/wav", "data": base64.b64encode(WAV).decode()},
        {"type": "document", "url": "https://example.com/a.pdf",
         "media_type": "application/pdf"}]
    (snapshot,) = [e for e in later if e["type"] == "MESSAGES_SNAPSHOT"]
    assert UserMessage.model_validate(snapshot["messages"][0]) == picture("u1")


def test_an_older_binary_part_is_read_by_its_media_type() -> None:
    seen = Seen()
    sent = body("t", "r1")
    sent["messages"] = [{"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "and this?"},
        {"type": "binary", "mimeType": "application/pdf", "filename": "a.pdf",
         "data": base64.b64encode(b"%PDF-1.4").decode()}]}]
    with TestClient(create_app(TEMPLATE, FunctionModel(seen))) as client:
        post_run(client, sent)
    assert seen.last is not None and seen.last.content == (
        Text("and this?"), Document(b"%PDF-1.4", media_type="application/pdf",
                                    filename="a.pdf"))


@pytest.mark.parametrize(("part", "status", "error"), [
    ({"type": "video", "source": {"type": "url", "value": "https://example.com/v.mp4"}}, 400,
     '"messages[0].content[1].type" must be one of text, image, audio, document, binary, got '
     "'video' (convo keeps no video part)"),
    ({"type": "image", "source": {"type": "file", "value": "file-123"}}, 400,
     '"messages[0].content[1].source.type" must be "data" or "url", got \'file\' (a file held '
     "by a provider cannot be read)"),
    ({"type": "image", "source": {"type": "data", "value": "not base64!",
                                  "mimeType": "image/png"}}, 400,
     '"messages[0].content": content part 2: \'data\' of the image part is not valid base64'),
    ({"type": "binary", "mimeType": "image/png", "id": "up-1"}, 400,
     '"messages[0].content[1]" must carry exactly one of "data" (base64) or "url"'),
    ({"type": "image", "source": {"type": "data", "value": base64.b64encode(
        b"x" * 2048).decode(), "mimeType": "image/png"}}, 413,
     '"messages[0].content": content part 2 (image) is 2 kB (2048 bytes), over the limit '
     "of 1024 bytes per attachment"),
])
def test_a_part_convo_cannot_read_is_refused_naming_it(part: dict[str, Any], status: int,
                                                       error: str) -> None:
    seen = Seen()
    sent = body("t", "r1")
    sent["messages"] = [{"id": "u1", "role": "user",
                         "content": [{"type": "text", "text": "look"}, part]}]
    app = create_app(TEMPLATE, FunctionModel(seen), max_attachment_bytes=1024)
    with TestClient(app) as client:
        answer = client.post("/agui", json=sent)
        listed = client.get("/api/conversations").json()["conversations"]
    assert answer.status_code == status and answer.json()["error"].startswith(error), \
        answer.json()
    assert listed == [] and seen.last is None
