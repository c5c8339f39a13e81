"""Oversized request bodies (API.md §9, §20) on every route that reads one, on every store: a
body whose Content-Length is over the limit is refused unread (a real server on a socket: the
413 comes back though the rest was never sent), a chunked one as soon as the bytes passed it
(counted as the app reads them), and reading a large body costs time in proportion to it."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from serve_kit import TEMPLATE, model
from uvicorn_app import uvicorn_app

from convo.serve import TokenTable, create_app

ANN, OLGA = {"Authorization": "Bearer t-ann"}, {"Authorization": "Bearer t-olga"}
AUTH = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
# max_message_bytes=100 → 4 * 100 + 65536; a message's body also fits 8 attachments of
# 3000 bytes as base64 (4000 bytes and 1024 for the part's JSON each).
LIMIT, MESSAGE_LIMIT = 65936, 65936 + 8 * (4000 + 1024)
ROUTES = [  # (path, who, limit): every route that reads a body
    ("/api/conversations", ANN, LIMIT),
    ("/api/conversations/{id}/messages", ANN, MESSAGE_LIMIT),
    ("/api/conversations/{id}/approvals", ANN, LIMIT),
    ("/api/conversations/{id}/retry", ANN, LIMIT),
    ("/api/conversations/{id}/cancel", ANN, LIMIT),
    ("/api/conversations/{id}/feedback", ANN, LIMIT),
    ("/api/conversations/{id}/operator_messages", OLGA, LIMIT),
    ("/api/conversations/{id}/handback", OLGA, LIMIT),
]


def app(store: str) -> Any:
    return create_app(TEMPLATE, model(), store=store, auth=AUTH, max_message_bytes=100,
                      max_attachment_bytes=3000)


@pytest.fixture
def server(store_url: str) -> Iterator[tuple[int, str]]:
    """The app under uvicorn on a free port: (port, a conversation of ann's)."""
    with uvicorn_app(app(store_url)) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        created = client.post("/api/conversations", json={}, headers=ANN)
        assert created.status_code == 201
        yield int(url.rsplit(":", 1)[1]), created.json()["id"]


def _whole_answer(sock: socket.socket) -> bytes:
    """One HTTP answer as it comes: its head, then as many bytes as its Content-Length says
    (not until the server closes, which it does only at its keep-alive timeout)."""
    answer = b""
    while True:
        head, found, body = answer.partition(b"\r\n\r\n")
        if found:
            length = re.search(rb"(?im)^content-length: *(\d+)\r?$", head)
            assert length is not None, f"an answer without a Content-Length: {head!r}"
            if len(body) >= int(length.group(1)):
                return answer
        chunk = sock.recv(65536)
        assert chunk, f"the server closed before its answer was whole: {answer!r}"
        answer += chunk


def _status_and_body(answer: bytes) -> tuple[int, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_a_body_over_the_limit_is_refused_from_its_content_length_unread(
        server: tuple[int, str]) -> None:
    port, conversation = server
    for path, who, limit in ROUTES:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            # Only the first byte of the body is sent: the answer must not wait for the rest.
            sock.sendall(f"POST {path.format(id=conversation)} HTTP/1.1\r\nHost: convo\r\n"
                         f"Authorization: {who['Authorization']}\r\n"
                         "Content-Type: application/json\r\n"
                         f"Content-Length: {limit + 1}\r\n\r\n{{".encode())
            answer = _whole_answer(sock)  # (read while the rest of the body is never sent)
        assert _status_and_body(answer) == (
            413, {"error": f"the request body is over {limit} bytes"}), path


def test_a_chunked_body_is_cut_off_as_soon_as_it_passes_the_limit(store_url: str) -> None:
    async def send() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app(store_url)),
                                     base_url="http://convo") as client:
            created = await client.post("/api/conversations", json={}, headers=ANN)
            conversation = created.json()["id"]
            for path, who, limit in ROUTES:
                read = [0]

                async def body(read: list[int] = read) -> AsyncIterator[bytes]:
                    yield b'{"content": "'
                    while True:  # endless: only the app's refusal stops it
                        read[0] += 1000
                        yield b"x" * 1000

                answer = await client.post(path.format(id=conversation), content=body(),
                                           headers=who)
                assert "content-length" not in answer.request.headers  # chunked
                assert (answer.status_code, answer.json()) == (
                    413, {"error": f"the request body is over {limit} bytes"}), path
                # read as far as the chunk that passed the limit, and no further
                assert limit < read[0] + 13 <= limit + 1000, path

    asyncio.run(send())


def test_reading_a_large_body_costs_time_in_proportion_to_it() -> None:
    # 32 MB of text in 64 kB chunks, under the body limit a message's attachments make room
    # for: it is read, parsed and refused for its text. Adding each chunk to the bytes read
    # so far copied them all again: seconds of CPU for 32 MB (15 s for 100 MB through
    # convo serve), where reading it once takes a fraction of one.
    chunk, chunks = b"x" * 65536, 512

    async def body() -> AsyncIterator[bytes]:
        yield b'{"content": "'
        for _ in range(chunks):
            yield chunk
        yield b'"}'

    async def send() -> tuple[int, Any, float]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(
                TEMPLATE, model())), base_url="http://convo") as client:
            conversation = (await client.post("/api/conversations", json={})).json()["id"]
            started = time.process_time()
            answer = await client.post(f"/api/conversations/{conversation}/messages",
                                       content=body())
            return answer.status_code, answer.json(), time.process_time() - started

    status, error, cpu = asyncio.run(send())
    assert (status, error) == (413, {"error": '"content" is over 32768 bytes'})
    assert cpu < 1.0, f"{cpu:.2f} s of CPU to refuse a 32 MB body"
