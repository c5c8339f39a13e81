"""API.md §16 over HTTP: a message's content as a list of parts, sent on to a vision model
(the fake OpenAI server, exact request bodies), kept by every store, limits as 413/400."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from message_json import unnumbered
from parts_files import png
from starlette.testclient import TestClient
from weather_tools import chat

from convo import OpenAIModel
from convo.serve import create_app
from convo.serve._stores import Store, open_store
from convo.testing import OpenAIServer

PNG = png()
B64 = base64.b64encode(PNG).decode()
TEMPLATE = chat("You look at images.")
IMAGE_MESSAGE = [{"type": "text", "text": "What is this?"},
                 {"type": "image", "media_type": "image/png", "data": B64,
                  "filename": "shot.png"}]


@pytest.fixture
def vision() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


@pytest.fixture
def client(store: Store, vision: OpenAIServer) -> Iterator[TestClient]:
    model = OpenAIModel("vision-model", base_url=vision.base_url, api_key="test")
    with TestClient(create_app(TEMPLATE, model, store=store, max_attachment_bytes=1000,
                               max_message_bytes=100)) as c:
        yield c


def start(client: TestClient) -> str:
    return str(client.post("/api/conversations", json={}).json()["id"])


def messages_of_new(client: TestClient) -> str:
    """The messages URL of a new conversation."""
    return f"/api/conversations/{start(client)}/messages"


MEMORY_ONLY = pytest.mark.parametrize("store_url", ["memory"], indirect=False)


def test_an_image_sent_over_http_reaches_the_model_and_is_kept(
        client: TestClient, vision: OpenAIServer, store_url: str) -> None:
    vision.add("A tiny square.")
    cid = start(client)
    answer = client.post(f"/api/conversations/{cid}/messages",
                         json={"content": IMAGE_MESSAGE})
    assert answer.status_code == 200, answer.text
    added = unnumbered(answer.json()["added"])
    assert added == [{"role": "user", "content": IMAGE_MESSAGE},
                     {"role": "assistant", "content": "A tiny square.",
                      "metadata": added[1]["metadata"]}]
    assert vision.requests[0]["messages"] == [
        {"role": "system", "content": "You look at images."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]}]
    # The GET returns the parts, data inline (docs/parts.md).
    kept = unnumbered(client.get(f"/api/conversations/{cid}").json()["messages"])
    assert kept[1] == {"role": "user", "content": IMAGE_MESSAGE}


def test_a_conversation_with_an_image_goes_on_after_a_restart(
        store_url: str, vision: OpenAIServer) -> None:
    if store_url == "memory":
        pytest.skip("a memory store does not outlive its app")
    model = OpenAIModel("vision-model", base_url=vision.base_url, api_key="test")
    vision.add("A tiny square.", "It is blue.")
    with TestClient(create_app(TEMPLATE, model, store=open_store(store_url))) as first:
        cid = start(first)
        first.post(f"/api/conversations/{cid}/messages", json={"content": IMAGE_MESSAGE})
    with TestClient(create_app(TEMPLATE, model, store=open_store(store_url))) as second:
        answer = second.post(f"/api/conversations/{cid}/messages",
                             json={"content": "What colour?"})
        assert answer.status_code == 200, answer.text
    assert vision.requests[1]["messages"][1] == vision.requests[0]["messages"][1]
    assert vision.requests[1]["messages"][3] == {"role": "user", "content": "What colour?"}


@MEMORY_ONLY
def test_an_attachment_over_the_limit_is_413_and_calls_no_model(
        client: TestClient, vision: OpenAIServer) -> None:
    cid = start(client)
    big = base64.b64encode(b"\0" * 1001).decode()
    answer = client.post(f"/api/conversations/{cid}/messages", json={"content": [
        {"type": "text", "text": "see"},
        {"type": "document", "media_type": "application/pdf", "data": big}]})
    assert (answer.status_code, answer.json()) == (413, {"error": (
        "content part 2 (document) is 1 kB (1001 bytes), over the limit of 1000 bytes per "
        "attachment (--max-attachment-bytes)")})
    assert vision.requests == []


@MEMORY_ONLY
def test_only_the_text_counts_against_max_message_bytes(
        client: TestClient, vision: OpenAIServer) -> None:
    vision.add("ok")
    url = messages_of_new(client)
    image = {"type": "image", "media_type": "image/png", "data": base64.b64encode(
        b"\0" * 900).decode()}  # 1200 bytes of base64, over 100: not counted
    small = client.post(url, json={"content": [{"type": "text", "text": "x" * 10}, image]})
    assert small.status_code == 200
    answer = client.post(url, json={"content": [{"type": "text", "text": "x" * 101}, image]})
    assert (answer.status_code, answer.json()) == (
        413, {"error": 'the text of "content" is over 100 bytes'})


@MEMORY_ONLY
@pytest.mark.parametrize(("part", "error"), [
    ({"type": "video", "url": "https://example.com/v.mp4"},
     "content part 1: expected a 'type' of 'text', 'image', 'audio' or 'document'; got 'video'"),
    ({"type": "image", "media_type": "image/png", "data": "***"},
     "content part 1: 'data' of the image part is not valid base64 (Only base64 data is "
     "allowed)"),
    ({"type": "image"}, "content part 1: an image part needs exactly one of 'data' (base64) "
                        "or 'url'"),
    ("just text", 'content part 1 must be an object such as {"type": "text", "text": "..."}; '
                  "got str"),
    ({"type": "text", "text": "   "}, '"content" has no text and no attachment: send some '
                                     "text"),
])
def test_a_malformed_part_is_400_naming_it(client: TestClient, part: object,
                                           error: str) -> None:
    cid = start(client)
    answer = client.post(f"/api/conversations/{cid}/messages", json={"content": [part]})
    assert (answer.status_code, answer.json()) == (400, {"error": error})


@MEMORY_ONLY
def test_the_same_parts_with_the_same_key_answer_as_the_first_time(
        client: TestClient, vision: OpenAIServer) -> None:
    vision.add("A tiny square.")
    url = messages_of_new(client)
    headers = {"Idempotency-Key": "k1"}
    first = client.post(url, json={"content": IMAGE_MESSAGE}, headers=headers)
    again = client.post(url, json={"content": IMAGE_MESSAGE}, headers=headers)
    assert again.json() == first.json() and len(vision.requests) == 1
    other = client.post(url, json={"content": [
        IMAGE_MESSAGE[0], {"type": "image", "url": "https://example.com/b.png"}]},
        headers=headers)
    assert other.status_code == 409
