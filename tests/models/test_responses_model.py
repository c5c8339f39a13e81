"""What only the Responses API has, through the whole stack: Runner -> OpenAIModel(api=
"responses") -> the real openai SDK -> HTTP -> OpenAIServer on 127.0.0.1. Behaviour shared with
Chat Completions runs on both APIs in tests/models/test_openai_model.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from models_kit import InjectedClient, Parsed
from weather_tools import agent

from convo import (
    ContextLengthError,
    Message,
    ModelError,
    OpenAIModel,
    Runner,
    RunStatus,
    Session,
    ToolCall,
    Usage,
)
from convo.events import Event, ReplyTruncated, TextDelta
from convo.models._deltas import Deltas
from convo.templates import AssistantTemplate, LinearTemplate, UserTemplate
from convo.testing import ErrorReply, OpenAIServer, RecordingModel, ReplayModel
from convo.testing._server.responses_wire import events_from_message, response_from_message

THOUGHT = {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA-opaque-1",
           "summary": [{"type": "summary_text", "text": "Oslo: look up the weather."}]}
SECOND_THOUGHT = {"id": "rs_2", "type": "reasoning", "encrypted_content": "gAAA-opaque-2",
                  "summary": []}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def responses_model(server: OpenAIServer, **kw: Any) -> OpenAIModel:
    kw.setdefault("max_retries", 0)
    return OpenAIModel("o4-mini", base_url=server.base_url, api_key="k", api="responses",
                       reasoning={"effort": "low", "summary": "auto"}, **kw)


def calling(text: str) -> Message:
    """A scripted reply that thought first, then said ``text`` and called weather(Oslo)."""
    return Message("assistant", text, tool_calls=[ToolCall("call_1", "weather",
                                                           {"city": "Oslo"})],
                   metadata={"reasoning": [THOUGHT]})


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_is_kept_on_the_reply_and_sent_back_in_place(server: OpenAIServer,
                                                               stream: bool) -> None:
    server.add(calling("Checking."),
               Message("assistant", "Sunny.", metadata={"reasoning": [SECOND_THOUGHT]}))
    with responses_model(server, stream=stream) as model:
        session = Runner(model, agent("Oslo?")).run()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert session.messages[2].metadata["reasoning"] == [THOUGHT]
    assert session.messages[-1].metadata["reasoning"] == [SECOND_THOUGHT]
    first, second = server.requests
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert first["store"] is False
    assert second["input"] == [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Oslo?"},
        THOUGHT,
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "call_1", "name": "weather",
         "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny in Oslo"},
    ]
    assert server.paths == ["/v1/responses", "/v1/responses"]


def test_a_resumed_conversation_sends_its_reasoning(server: OpenAIServer) -> None:
    server.add(calling(""), "Sunny.", "You are welcome.")
    with responses_model(server) as model:
        first = Runner(model, agent("Oslo?")).run()
        saved = Session.from_json(first.to_json())
        more = LinearTemplate([UserTemplate("Thanks!"), AssistantTemplate()])
        Runner(model, more).run(saved)
    assert server.requests[2]["input"][2:4] == [
        THOUGHT, {"type": "function_call", "call_id": "call_1", "name": "weather",
                  "arguments": '{"city": "Oslo"}'}]
    assert server.requests[2]["input"][-1] == {"role": "user", "content": "Thanks!"}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_streamed_reasoning_summaries_reach_a_reasoning_callback(server: OpenAIServer,
                                                                 asynchronous: bool) -> None:
    server.add(Message("assistant", "It is sunny in Oslo today.",
                       metadata={"reasoning": [THOUGHT]}))
    texts: list[str] = []
    thoughts: list[str] = []
    deltas = Deltas(texts.append, thoughts.append)
    messages = [Message("user", "Oslo?")]
    with responses_model(server, stream=True) as model:
        if asynchronous:
            reply = asyncio.run(model.acomplete(messages, on_delta=deltas))
        else:
            reply = model.complete(messages, on_delta=deltas)
    assert "".join(thoughts) == "Oslo: look up the weather."
    assert len(thoughts) == 4  # in pieces, as they came
    assert "".join(texts) == reply.content == "It is sunny in Oslo today."


def test_a_plain_text_callback_never_sees_reasoning(server: OpenAIServer) -> None:
    server.add(Message("assistant", "Sunny.", metadata={"reasoning": [THOUGHT]}))
    events: list[Event] = []
    with responses_model(server, stream=True) as model:
        Runner(model, LinearTemplate([UserTemplate("Oslo?"), AssistantTemplate()]),
               on_event=events.append).run()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Sunny."]


@pytest.mark.parametrize("stream", [False, True])
def test_an_incomplete_reply_is_a_truncated_reply(server: OpenAIServer, stream: bool) -> None:
    server.add(Message("assistant", "Once upon a", metadata={"finish_reason": "length"}))
    events: list[Event] = []
    with responses_model(server, stream=stream, max_tokens=3) as model:
        session = Runner(model, LinearTemplate([UserTemplate("A story?"),
                                                AssistantTemplate()]),
                         on_event=events.append).run()
    assert server.requests[0]["max_output_tokens"] == 3
    truncated = [e for e in events if isinstance(e, ReplyTruncated)]
    assert [e.message.content for e in truncated] == ["Once upon a"]
    assert session.messages[-1].metadata["finish_reason"] == "length"


def test_usage_counts_reasoning_tokens(server: OpenAIServer) -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 50, "total_tokens": 70,
             "reasoning_tokens": 40}
    server.add(Message("assistant", "42.", metadata={"usage": usage}))
    with responses_model(server, stream=True) as model:
        session = Runner(model, LinearTemplate([UserTemplate("?"), AssistantTemplate()])).run()
    assert session.messages[-1].metadata["usage"] == usage
    assert session.outcome is not None
    assert session.outcome.usage == Usage(20, 50, 70, reasoning_tokens=40)
    assert session.outcome.to_dict()["usage"]["reasoning_tokens"] == 40


def test_store_true_is_sent_and_asks_for_no_encrypted_reasoning(server: OpenAIServer) -> None:
    server.add("Hi.")
    with responses_model(server, store=True) as model:
        model.complete([Message("user", "hi")])
    assert server.requests[0]["store"] is True
    assert "include" not in server.requests[0]


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


STREAMED = {"Content-Type": "text/event-stream"}
TEXT = {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
        "item_id": "msg_1", "delta": "Half"}


@pytest.mark.parametrize(("body", "error", "said"), [
    (sse(TEXT, {"type": "response.failed", "response": {
        "id": "r", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": "The model crashed"}}}),
     ModelError, "the stream said the reply failed (response.failed): The model crashed "
                 "(server_error). Check the server's log"),
    (sse({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}),
     ModelError, "the stream said the reply failed (error): Slow down (rate_limit_exceeded)"),
    (sse({"type": "response.failed", "response": {"status": "failed", "output": [], "error": {
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model."}}}),
     ContextLengthError, "bound what is sent with ContextWindow"),
    (sse(TEXT), ModelError, "ended after 1 chunks without a response.completed event: the "
                            "reply was cut off"),
])
def test_failed_and_unfinished_streams_are_model_errors(
        server: OpenAIServer, body: str, error: type[Exception], said: str) -> None:
    server.add(ErrorReply(200, STREAMED, body))
    with responses_model(server, stream=True) as model, pytest.raises(error) as caught:
        model.complete([Message("user", "hi")])
    assert said in str(caught.value)
    assert server.base_url in str(caught.value)


def test_a_failed_response_is_a_model_error(server: OpenAIServer) -> None:
    server.add(ErrorReply(200, body={"id": "r", "object": "response", "status": "failed",
                                     "output": [], "error": {"message": "The model crashed"}}))
    with responses_model(server) as model, pytest.raises(ModelError) as caught:
        model.complete([Message("user", "hi")])
    assert "the response failed: The model crashed" in str(caught.value)


def test_an_http_400_for_a_long_conversation_is_a_context_length_error(
        server: OpenAIServer) -> None:
    server.add(ErrorReply(400, body={"error": {
        "message": "Your input exceeds the context window of this model.",
        "code": "context_length_exceeded", "type": "invalid_request_error"}}))
    with responses_model(server) as model, pytest.raises(ContextLengthError, match="HTTP 400"):
        model.complete([Message("user", "hi")])


def test_a_server_without_the_responses_api_is_named_as_such(server: OpenAIServer) -> None:
    server.add(ErrorReply(404))
    with responses_model(server) as model, pytest.raises(ModelError) as caught:
        model.complete([Message("user", "hi")])
    assert str(caught.value).startswith(f"HTTP 404 Not Found from {server.base_url} (model "
                                        "'o4-mini')")
    assert str(caught.value).endswith(
        ". Or the server does not serve the Responses API (POST /v1/responses): use "
        "api='chat' (--api chat) with it")


def test_record_and_replay_on_the_responses_api(server: OpenAIServer, tmp_path: Path) -> None:
    server.add(calling("Checking."), "Sunny.")
    path = tmp_path / "oslo.json"
    with responses_model(server) as model:
        recorded = Runner(RecordingModel(model, path), agent("Oslo?")).run()
    replayed = Runner(ReplayModel(path), agent("Oslo?")).run()
    assert replayed.messages == recorded.messages
    assert replayed.messages[2].metadata["reasoning"] == [THOUGHT]


# -- the fake server, for the raw SDK ----------------------------------------------------------


def test_the_raw_sdk_reads_the_fake_servers_responses(server: OpenAIServer) -> None:
    server.add(calling("Checking."), "Plain.")
    with openai.OpenAI(base_url=server.base_url, api_key="k") as client:
        response = client.responses.create(model="m", input="Oslo?")
        assert [item.type for item in response.output] == ["reasoning", "message",
                                                            "function_call"]
        assert response.output_text == "Checking."
        assert response.usage is not None and response.usage.input_tokens == 2
        with client.responses.stream(model="m", input="again") as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
    assert final.output_text == "Plain."
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert server.paths == ["/v1/responses", "/v1/responses"]
    assert server.requests[0] == {"model": "m", "input": "Oslo?"}


def test_unknown_paths_name_both_apis(server: OpenAIServer) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client, \
            pytest.raises(openai.NotFoundError) as caught:
        client.completions.create(model="m", prompt="hi")
    assert ("OpenAIServer serves POST /v1/chat/completions and POST /v1/responses, not POST "
            "/v1/completions") in str(caught.value)


def test_repr_names_the_api() -> None:
    assert repr(OpenAIModel("o4-mini", api="responses")) == (
        "OpenAIModel('o4-mini', api='responses', stream=False)")


def test_the_reasoning_example_runs_the_same_on_both_apis_and_its_mock() -> None:
    import importlib.util

    from convo import ScriptedInterface

    path = Path(__file__).parents[2] / "examples" / "reasoning_agent.py"
    spec = importlib.util.spec_from_file_location("reasoning_agent_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    sessions = [Runner(example.mock_model, example.template,
                       ScriptedInterface(example.demo_input)).run()]
    for api in ("chat", "responses"):
        with OpenAIServer(example.mock_model.replies) as server, OpenAIModel(
                "o4-mini", base_url=server.base_url, api=api, stream=True,
                max_retries=0) as model:
            sessions.append(Runner(model, example.template,
                                   ScriptedInterface(example.demo_input)).run())
            sent = server.requests[1]
        if api == "responses":
            assert sent["input"][2]["type"] == "reasoning"
    mock, chat, responses = ([(m.role, m.content, m.tool_calls) for m in s.messages]
                             for s in sessions)
    assert chat == responses == mock
    assert len(mock) == 7


@pytest.mark.parametrize("stream", [False, True])
def test_an_injected_client_without_raw_responses(stream: bool) -> None:
    reply = Message("assistant", "Hi there.", metadata={"reasoning": [THOUGHT]})
    made = (Parsed(events_from_message(reply, model="m", response_id="r", created=0))
            if stream else response_from_message(reply, model="m", response_id="r", created=0))
    thoughts: list[str] = []
    model = OpenAIModel("m", client=InjectedClient(made), stream=stream, api="responses")
    got = model.complete([Message("user", "x")], on_delta=Deltas(lambda _: None,
                                                                 thoughts.append))
    assert (got.content, got.metadata["reasoning"]) == ("Hi there.", [THOUGHT])
    assert "".join(thoughts) == ("Oslo: look up the weather." if stream else "")
