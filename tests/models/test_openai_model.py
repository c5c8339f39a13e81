"""The whole stack: Runner -> template -> OpenAIModel -> real openai SDK -> HTTP -> OpenAIServer.

Nothing here reaches the internet: every request goes to an OpenAIServer on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from weather_tools import agent, answer, weather

from convo import Message, ModelError, OpenAIModel, Runner, RunStatus, Session, ToolCall, Usage
from convo.events import Event, ModelCallEnded, TextDelta
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)
from convo.testing import ErrorReply, OpenAIServer, SlowReply
from convo.testing._server import CutReply
from convo.tools import EndConversationTool, FinishTool


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    """The API a behaviour test runs on: each runs on both (API.md §15)."""
    param: str = request.param
    return param


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def chat_template() -> LinearTemplate:
    return LinearTemplate([SystemTemplate("You are terse."), UserTemplate("Say hello."),
                           AssistantTemplate()])


def run(server: OpenAIServer, api: str, template: Template, *replies: Any,
        raise_errors: bool = False, on_event: Any = None, **model_kw: Any) -> Session:
    server.add(*replies)
    model_kw.setdefault("max_retries", 0)
    with OpenAIModel("test-model", base_url=server.base_url, api_key="test", api=api,
                     **model_kw) as model:
        return Runner(model, template, on_event=on_event, raise_errors=raise_errors).run()


PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}


def tool_of(wire: dict[str, Any]) -> dict[str, Any]:
    """A tool as sent: Chat Completions nests the function, the Responses API does not."""
    function: dict[str, Any] = wire.get("function", wire)
    return function


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def error_of(session: Session) -> str:
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.ERROR
    assert session.outcome.error is not None
    return session.outcome.error


# -- plain chat -------------------------------------------------------------------------------


def test_plain_chat(api: str, server: OpenAIServer) -> None:
    session = run(server, api, chat_template(), "Hello!")
    assert [(m.role, m.content) for m in session.messages] == [
        ("system", "You are terse."), ("user", "Say hello."), ("assistant", "Hello!")]
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.COMPLETED
    assert session.outcome.usage == Usage(7, 1, 8)
    assert session.messages[-1].metadata == {
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}
    sent = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."}]
    assert server.requests == ([{"model": "test-model", "messages": sent}] if api == "chat"
                               else [{"model": "test-model", "input": sent, "store": False}])
    assert server.paths == [PATHS[api]]


def test_settings_and_extra_reach_the_request(api: str, server: OpenAIServer) -> None:
    # an extra the API takes: responses.create has no seed, but a truncation
    extra, value = ("seed", 7) if api == "chat" else ("truncation", "auto")
    run(server, api, chat_template(), "Hi", temperature=0.2, max_tokens=50, top_p=0.9,
        user="ann", **{extra: value})
    request = server.requests[0]
    max_tokens = "max_tokens" if api == "chat" else "max_output_tokens"
    assert {k: request[k] for k in ("temperature", max_tokens, extra, "top_p", "user")} == {
        "temperature": 0.2, max_tokens: 50, extra: value, "top_p": 0.9, "user": "ann"}


def test_streaming_gives_the_same_session_and_deltas_as_they_arrive(api: str) -> None:
    text = "Hello there, friend. This reply is streamed in several pieces."
    with OpenAIServer() as plain_server:
        plain = run(plain_server, api, chat_template(), text)
    events: list[Event] = []
    with OpenAIServer() as stream_server:
        streamed = run(stream_server, api, chat_template(), text, stream=True,
                       on_event=events.append)
        assert stream_server.requests[0]["stream"] is True
        if api == "chat":  # the Responses API always sends usage with response.completed
            assert stream_server.requests[0]["stream_options"] == {"include_usage": True}
    assert streamed.messages == plain.messages
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3
    assert "".join(deltas) == text
    assert streamed.outcome is not None and plain.outcome is not None
    assert streamed.outcome.usage == plain.outcome.usage == Usage(7, 10, 17)


def test_usage_is_summed_over_the_run_and_reported_per_call(api: str, server: OpenAIServer) -> None:
    events: list[Event] = []
    template = LinearTemplate([UserTemplate("one"), AssistantTemplate(),
                               UserTemplate("two three"), AssistantTemplate()])
    session = run(server, api, template,
                  Message("assistant", "a", metadata={"usage": {
                      "prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}),
                  Message("assistant", "b", metadata={"usage": {
                      "prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}}),
                  on_event=events.append)
    assert session.outcome is not None
    assert session.outcome.usage == Usage(30, 5, 35)
    assert session.outcome.model_calls == 2
    assert [e.usage for e in events if isinstance(e, ModelCallEnded)] == [
        Usage(10, 2, 12), Usage(20, 3, 23)]


def test_arun_against_the_same_server(api: str, server: OpenAIServer) -> None:
    server.add("first", "second")
    model = OpenAIModel("test-model", api=api, base_url=server.base_url, api_key="test",
                        stream=True)

    async def main() -> list[Session]:
        async with model:
            runner = Runner(model, chat_template())
            return [await runner.arun(), await runner.arun()]

    sessions = asyncio.run(main())
    assert [s.messages[-1].content for s in sessions] == ["first", "second"]
    assert all(s.outcome is not None and s.outcome.status == "completed" for s in sessions)


def test_one_model_serves_many_concurrent_async_runs(api: str, server: OpenAIServer) -> None:
    count = 100
    server.add(*[f"reply {i}" for i in range(count)])
    model = OpenAIModel("test-model", api=api, base_url=server.base_url, api_key="test")
    runner = Runner(model, chat_template())

    async def main() -> list[Session]:
        try:
            return list(await asyncio.gather(*(runner.arun() for _ in range(count))))
        finally:
            await model.aclose()

    sessions = asyncio.run(main())
    assert sorted(s.messages[-1].content for s in sessions) == sorted(
        f"reply {i}" for i in range(count))
    server.assert_complete()


def test_a_model_used_from_two_event_loops_and_sync(api: str, server: OpenAIServer) -> None:
    server.add("a", "b", "c")
    with OpenAIModel(base_url=server.base_url, api_key="test", api=api) as model:
        runner = Runner(model, chat_template())
        # Each asyncio.run gets its own pool; the loop's shutdown closes it (no socket leaks).
        first = asyncio.run(runner.arun())
        second = asyncio.run(runner.arun())
        third = runner.run()
    assert [s.messages[-1].content for s in (first, second, third)] == ["a", "b", "c"]


def test_clients_are_made_once_and_reused(api: str, server: OpenAIServer) -> None:
    server.add("a", "b")
    with OpenAIModel(base_url=server.base_url, api_key="test", api=api) as model:
        assert model._client is None
        model.complete([Message("user", "x")])
        client = model.client
        model.complete([Message("user", "y")])
        assert model.client is client
    assert model._client is None


def test_injected_clients_are_used_and_not_closed(api: str, server: OpenAIServer) -> None:
    server.add("sync reply", "async reply")
    with openai.OpenAI(base_url=server.base_url, api_key="x") as client:
        async_client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")
        model = OpenAIModel("m", api=api, client=client, async_client=async_client)
        assert model.complete([Message("user", "hi")]).content == "sync reply"

        async def main() -> Message:
            try:
                return await model.acomplete([Message("user", "hi")])
            finally:
                await async_client.close()

        assert asyncio.run(main()).content == "async reply"
        model.close()
        assert model.client is client
        assert not client.is_closed()


# -- configuration ---------------------------------------------------------------------------


def test_environment_variables_configure_the_model(api: str, server: OpenAIServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.add("from the env")
    with OpenAIModel(max_retries=0, api=api) as model:
        session = Runner(model, chat_template()).run()
        assert str(model.client.base_url).rstrip("/") == server.base_url
        assert model.client.api_key == "env-key"
    assert session.messages[-1].content == "from the env"
    assert server.requests[0]["model"] == "gpt-4o-mini"


def test_a_base_url_without_a_key_sends_a_placeholder(api: str, server: OpenAIServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add("local")
    with OpenAIModel("llama3", api=api, base_url=server.base_url) as model:
        assert model.complete([Message("user", "hi")]).content == "local"
        assert model.client.api_key == "not-needed"


def test_no_key_and_no_base_url_says_what_to_set(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    session = Runner(OpenAIModel(api=api), chat_template(), raise_errors=False).run()
    assert "OPENAI_API_KEY" in error_of(session)
    assert "base_url=" in error_of(session)


# -- failures ----------------------------------------------------------------------------------


def test_429_with_retry_after_then_success(api: str, server: OpenAIServer) -> None:
    session = run(server, api, chat_template(), ErrorReply(429, {"Retry-After": "0"}), "Made it.",
                  max_retries=2)
    assert session.messages[-1].content == "Made it."
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert len(server.requests) == 2


def test_a_persistent_500_ends_the_run_with_error_and_keeps_the_session(
        api: str, server: OpenAIServer) -> None:
    fast = {"Retry-After": "0.001"}
    session = run(server, api, chat_template(), *[ErrorReply(500, fast)] * 3, max_retries=2)
    error = error_of(session)
    assert "HTTP 500 Internal Server Error" in error
    assert server.base_url in error
    assert "after 2 retries" in error
    assert "'test-model'" in error
    assert [m.role for m in session.messages] == ["system", "user"]
    assert len(server.requests) == 3


def test_a_persistent_500_is_raised_by_default(api: str, server: OpenAIServer) -> None:
    with pytest.raises(ModelError, match="HTTP 500"):
        run(server, api, chat_template(), ErrorReply(500), raise_errors=True)


def test_rate_limited_after_the_sdk_retries(api: str, server: OpenAIServer) -> None:
    limited = ErrorReply(429, {"Retry-After": "0.001"},
                         {"error": {"message": "Rate limit reached for requests"}})
    session = run(server, api, chat_template(), limited, limited, max_retries=1)
    error = error_of(session)
    assert "HTTP 429 Too Many Requests" in error
    assert "Rate limit reached for requests" in error
    assert "Rate limited after 1 retries" in error


@pytest.mark.parametrize(("status", "check"), [
    (401, "Check the API key"),
    (403, "Check the API key"),
    (404, "Check the model name ('test-model') and the base URL"),
    (400, "check the model name ('test-model'), the base URL"),
])
def test_client_errors_say_what_to_check(api: str, server: OpenAIServer, status: int,
                                         check: str) -> None:
    error = error_of(run(server, api, chat_template(), ErrorReply(status)))
    assert f"HTTP {status}" in error
    assert check in error


def test_connection_refused(api: str) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    # start_wait=0: a local server that refuses is otherwise waited for (test_tool_formats)
    with OpenAIModel(base_url=base_url, api_key="t", max_retries=0, start_wait=0,
                        api=api) as model:
        session = Runner(model, chat_template(), raise_errors=False).run()
    error = error_of(session)
    assert f"could not connect to {base_url}" in error
    assert "no HTTP status" in error
    assert "Check the base URL" in error
    assert [m.role for m in session.messages] == ["system", "user"]


def test_connection_refused_async(api: str) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    model = OpenAIModel(base_url=base_url, api_key="t", max_retries=0, start_wait=0,
                        api=api)

    async def main() -> Session:
        async with model:
            return await Runner(model, chat_template(), raise_errors=False).arun()

    assert "could not connect" in error_of(asyncio.run(main()))


def test_timeout(api: str, server: OpenAIServer) -> None:
    error = error_of(run(server, api, chat_template(), SlowReply("too late", 60), timeout=0.2))
    assert "did not answer within 0.2 s" in error
    assert "raise timeout=" in error


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_mid_way(api: str, server: OpenAIServer, stream: bool) -> None:
    events: list[Event] = []
    # two pieces of text: after the role chunk, or the response's first four events
    after = 3 if api == "chat" else 6
    session = run(server, api, chat_template(),
                  CutReply("This reply will never be finished, sadly.", after_chunks=after),
                  stream=stream, on_event=events.append)
    error = error_of(session)
    assert "broke off" in error
    assert "no HTTP status" in error
    assert [m.role for m in session.messages] == ["system", "user"]
    if stream:
        assert f"after {after} chunks" in error
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "This reply will "


def test_a_stream_that_ends_without_finishing(server: OpenAIServer) -> None:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "Half"}, "finish_reason": None}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    error = error_of(run(server, "chat", chat_template(),
                         ErrorReply(200, {"Content-Type": "text/event-stream"}, body),
                         stream=True))
    assert "ended after 1 chunks without a finish_reason" in error


@pytest.mark.parametrize("body", ["<html>Not an API</html>", {"object": "list", "data": []},
                                  {"choices": [{"index": 0, "text": "legacy completion"}]}])
def test_a_malformed_reply(api: str, server: OpenAIServer, body: Any) -> None:
    error = error_of(run(server, api, chat_template(), ErrorReply(200, body=body)))
    assert "malformed reply" in error
    assert "OpenAI-compatible /v1 endpoint" in error


def test_running_out_of_script_names_the_script(api: str, server: OpenAIServer) -> None:
    error = error_of(run(server, api, chat_template()))
    assert "HTTP 500" in error
    assert "OpenAIServer script ran out: 0 replies were scripted and request 1" in error


# -- tools -------------------------------------------------------------------------------------


def test_two_parallel_tool_calls(api: str, server: OpenAIServer) -> None:
    session = run(server, api, agent("Weather?", weather),
                  "{weather(city='Oslo')} {weather(city='Rome')}",
                  "Sunny in both.")
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.COMPLETED
    assert session.outcome.turn is not None
    assert session.outcome.turn.response == "Sunny in both."
    first, second = server.requests
    assert [tool_of(t)["name"] for t in first["tools"]] == ["weather"]
    assert tool_of(first["tools"][0])["parameters"]["properties"]["city"]["type"] == "string"
    assert first["tool_choice"] == "auto"
    if api == "responses":
        assert second["input"][2:] == [
            {"type": "function_call", "call_id": "call_1", "name": "weather",
             "arguments": '{"city": "Oslo"}'},
            {"type": "function_call", "call_id": "call_2", "name": "weather",
             "arguments": '{"city": "Rome"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "Sunny in Oslo"},
            {"type": "function_call_output", "call_id": "call_2", "output": "Sunny in Rome"},
        ]
        return
    assert second["messages"][2:] == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny in Oslo"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Sunny in Rome"},
    ]


def test_streamed_fragmented_tool_calls_give_the_same_session(api: str) -> None:
    replies = ["Let me check both cities for you. {weather(city='Oslo, Norway')} "
               "{weather(city='Rio de Janeiro, Brazil')}", "Sunny everywhere, it seems."]
    sessions = []
    for stream in (False, True):
        with OpenAIServer() as server:
            sessions.append(run(server, api, agent("Weather?", weather), *replies, stream=stream))
            sent = server.requests[1]
            arguments = (sent["input"][4] if api == "responses"
                         else sent["messages"][2]["tool_calls"][1]["function"])
            assert arguments["arguments"] == '{"city": "Rio de Janeiro, Brazil"}'
    plain, streamed = sessions
    assert streamed.messages == plain.messages
    assert streamed.turns == plain.turns
    assert plain.messages[2].tool_calls == (
        ToolCall("call_1", "weather", {"city": "Oslo, Norway"}),
        ToolCall("call_2", "weather", {"city": "Rio de Janeiro, Brazil"}))


def test_finish_flow(api: str, server: OpenAIServer) -> None:
    session = run(server, api, agent("Weather?", weather, FinishTool()),
                  "{weather(city='Oslo')}", "{finish(note='reported the weather')}",
                  stream=True)
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.COMPLETED
    assert session.outcome.turn is not None
    assert session.outcome.turn.terminated_by == "finish"
    assert session.outcome.turn.note == "reported the weather"
    assert session.messages[-1] == Message("tool", "reported the weather",
                                           tool_call_id="call_2", name="finish")
    assert len(server.requests) == 2


def test_terminal_tool_flow(api: str, server: OpenAIServer) -> None:
    session = run(server, api, agent("Weather?", weather, answer), "{answer(text='42')}")
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.COMPLETED
    assert session.messages[-1].role == "assistant"
    assert session.messages[-1].content == "Answer: 42"
    description = next(tool_of(t)["description"] for t in server.requests[0]["tools"]
                       if tool_of(t)["name"] == "answer")
    assert description.endswith("Calling this tool ends your turn: its output is your "
                                "response. Do not add text after calling it.")
    assert len(server.requests) == 1


def test_end_conversation_flow(api: str, server: OpenAIServer) -> None:
    session = run(server, api, agent("Weather?", weather, EndConversationTool()),
                  "{end_conversation(message='Goodbye!')}")
    assert session.outcome is not None
    assert session.outcome.status == RunStatus.ENDED
    assert session.outcome.farewell == "Goodbye!"
    assert session.messages[-1] == Message("assistant", "Goodbye!")
    assert len(server.requests) == 1


def test_malformed_tool_arguments_from_the_wire_reach_the_model_as_an_error(
        api: str, server: OpenAIServer) -> None:
    broken = Message("assistant", "", tool_calls=[
        ToolCall("c1", "weather", raw_arguments='{"city": "Os')])
    session = run(server, api, agent("Weather?", weather), broken, "Sorry.")
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    if api == "responses":
        call, output = server.requests[1]["input"][-2:]
        assert (call["call_id"], call["arguments"]) == ("c1", '{"city": "Os')
        assert (output["type"], output["call_id"]) == ("function_call_output", "c1")
        return
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "c1"
    assert server.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == (
        '{"city": "Os')


def test_stream_options_can_be_left_out_for_servers_that_refuse_them(
        server: OpenAIServer) -> None:
    session = run(server, "chat", chat_template(), "Hi", stream=True, stream_options=None)
    assert "stream_options" not in server.requests[0]
    assert session.messages[-1].content == "Hi"
    assert "usage" not in session.messages[-1].metadata


def test_repr() -> None:
    assert repr(OpenAIModel("m", base_url="http://x/v1", stream=True)) == (
        "OpenAIModel('m', base_url='http://x/v1', stream=True)")
