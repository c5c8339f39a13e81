"""The fake OpenAI server, spoken to over plain HTTP and through the real openai SDK."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from convo import Message, ToolCall
from convo._errors import ScriptError
from convo.testing import ErrorReply, OpenAIServer, SlowReply
from convo.testing._server import CutReply


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


@pytest.fixture
def client(server: OpenAIServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
        yield c


def post(server: OpenAIServer, body: Any, path: str = "/v1/chat/completions",
         ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, raw, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def chat(stream: bool = False, **extra: Any) -> dict[str, Any]:
    return {"model": "test-model", "messages": [{"role": "user", "content": "hi there"}],
            "stream": stream, **extra}


def sse_events(body: bytes) -> list[str]:
    return [line[len("data: "):] for line in body.decode().split("\n\n") if line]


def test_base_url_and_context_manager() -> None:
    with OpenAIServer(["hi"]) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.port > 0
    assert "closed" in repr(server)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), 1):
        pass


def test_plain_reply_with_usage(server: OpenAIServer) -> None:
    server.add("Hello world")
    status, headers, body = post(server, chat())
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    reply = json.loads(body)
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "test-model"
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "Hello world",
                                              "refusal": None}
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert server.requests == [chat()]


def test_tool_calls_from_the_script_syntax(server: OpenAIServer) -> None:
    server.add("Looking. {weather(city='Oslo')} {weather(city='Rome', days=2)}")
    status, _, body = post(server, chat())
    message = json.loads(body)["choices"][0]["message"]
    assert status == 200
    assert message["content"] == "Looking."
    assert message["tool_calls"] == [
        {"id": "call_1", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
        {"id": "call_2", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Rome", "days": 2}'}},
    ]
    assert json.loads(body)["choices"][0]["finish_reason"] == "tool_calls"


def test_message_replies_and_their_usage(server: OpenAIServer) -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    server.add(Message("assistant", "", tool_calls=[ToolCall("abc", "f", {"x": 1})],
                       metadata={"usage": usage}))
    _, _, body = post(server, chat())
    reply = json.loads(body)
    assert reply["usage"] == usage
    assert reply["choices"][0]["message"]["tool_calls"][0]["id"] == "abc"
    assert reply["choices"][0]["message"]["content"] is None


def test_streaming_splits_text_and_arguments_and_ends_with_usage(server: OpenAIServer) -> None:
    server.add("A fairly long answer. {search(query='the rain in spain stays mainly')}")
    status, headers, body = post(server, chat(stream=True,
                                              stream_options={"include_usage": True}))
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Transfer-Encoding"] == "chunked"
    events = sse_events(body)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = [c["choices"][0]["delta"]["content"] for c in chunks
            if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(text) > 1
    assert "".join(text) == "A fairly long answer."
    arguments = [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert len(arguments) > 3
    assert json.loads("".join(arguments)) == {"query": "the rain in spain stays mainly"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0


def test_streaming_without_include_usage_has_no_usage_chunk(server: OpenAIServer) -> None:
    server.add("Hi")
    _, _, body = post(server, chat(stream=True))
    chunks = [json.loads(e) for e in sse_events(body)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_error_replies(server: OpenAIServer) -> None:
    server.add(ErrorReply(429, {"Retry-After": "7"}),
               ErrorReply(400, body={"error": {"message": "bad model"}}),
               ErrorReply(200, body="this is not JSON"))
    status, headers, body = post(server, chat())
    assert (status, headers["Retry-After"]) == (429, "7")
    assert json.loads(body)["error"]["message"] == (
        "OpenAIServer: scripted HTTP 429 Too Many Requests")
    status, _, body = post(server, chat())
    assert (status, json.loads(body)) == (400, {"error": {"message": "bad model"}})
    status, headers, body = post(server, chat())
    assert (status, body) == (200, b"this is not JSON")
    assert headers["Content-Type"].startswith("text/plain")


def test_running_out_of_script_is_a_500_that_says_so(server: OpenAIServer) -> None:
    server.add("only one")
    post(server, chat())
    status, _, body = post(server, chat())
    assert status == 500
    assert json.loads(body)["error"]["message"] == (
        "OpenAIServer script ran out: 1 replies were scripted and request 2 asked for another")
    assert server.remaining == 0
    assert len(server.requests) == 2


def test_add_scripts_more_and_assert_complete(server: OpenAIServer) -> None:
    server.add("one", "two")
    assert server.remaining == 2
    with pytest.raises(AssertionError, match="2 of 2 scripted replies were not used"):
        server.assert_complete()
    post(server, chat())
    server.add("three")
    assert server.remaining == 2
    post(server, chat())
    post(server, chat())
    server.assert_complete()


def test_a_bad_script_fails_when_it_is_added(server: OpenAIServer) -> None:
    with pytest.raises(ScriptError, match="OpenAIServer reply 1"):
        server.add(42)  # type: ignore[arg-type]
    with pytest.raises(ScriptError, match="literal values"):
        server.add("{f(x=os.getcwd())}")


def test_bad_requests(server: OpenAIServer) -> None:
    status, _, body = post(server, b"{not json")
    assert status == 400
    assert "not a JSON object" in json.loads(body)["error"]["message"]
    status, _, body = post(server, chat(), path="/v1/embeddings")
    assert status == 404
    assert "POST /v1/chat/completions" in json.loads(body)["error"]["message"]
    assert server.requests == []


def test_models_listing(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["convo-test"]


def test_keep_alive_serves_many_requests_on_one_connection(server: OpenAIServer) -> None:
    server.add(*[f"reply {i}" for i in range(5)])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for i in range(5):
            conn.request("POST", "/v1/chat/completions", json.dumps(chat(stream=i % 2 == 1)))
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200
            assert f"reply {i}".split()[1] in body.decode()
    finally:
        conn.close()


def test_the_sdk_streams_from_it(server: OpenAIServer, client: openai.OpenAI) -> None:
    server.add("Streamed words arrive in pieces {f(a=1)}")
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True,
        stream_options={"include_usage": True})
    with stream:
        chunks = list(stream)
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Streamed words arrive in pieces")


def test_concurrent_requests_each_get_one_reply(server: OpenAIServer) -> None:
    count = 50
    server.add(*[f"reply {i}" for i in range(count)])
    with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as client, \
            concurrent.futures.ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(
            lambda _: client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            ).choices[0].message.content,
            range(count)))
    assert sorted(replies) == sorted(f"reply {i}" for i in range(count))
    assert len(server.requests) == count


def test_slow_reply_times_out_the_client_and_close_does_not_hang() -> None:
    with OpenAIServer([SlowReply("late", 60), "on time"]) as server, \
            openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0,
                          timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=[])
        reply = client.chat.completions.create(model="m", messages=[])
        assert reply.choices[0].message.content == "on time"
    # Leaving the block woke the slow handler; nothing is left waiting 60 s.


def test_slow_reply_answers_after_its_delay(server: OpenAIServer,
                                            client: openai.OpenAI) -> None:
    server.add(SlowReply("eventually {f(x=1)}", 0.01))
    reply = client.chat.completions.create(model="m", messages=[])
    assert reply.choices[0].message.content == "eventually"
    assert reply.choices[0].message.tool_calls is not None


@pytest.mark.parametrize("stream", [False, True])
def test_cut_reply_drops_the_connection(server: OpenAIServer, client: openai.OpenAI,
                                        stream: bool) -> None:
    server.add(CutReply("one two three four five six seven eight", after_chunks=2))
    with pytest.raises(openai.APIConnectionError):
        result = client.chat.completions.create(model="m", messages=[], stream=stream)
        if stream:
            with result:
                list(result)  # type: ignore[call-overload]


def test_close_drops_idle_keep_alive_connections() -> None:
    server = OpenAIServer(["a"])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(chat()))
        conn.getresponse().read()
        server.close()
        server.close()  # idempotent
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            conn.request("POST", "/v1/chat/completions", json.dumps(chat()))
            conn.getresponse()
    finally:
        conn.close()
