"""AnthropicModel through the whole stack: Runner -> AnthropicModel -> the anthropic SDK ->
HTTP -> AnthropicServer. Tools in parallel, thinking kept and sent back in place (also after
a resume), parts, a later system message, usage with the cache, errors and streaming."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from models_kit import check_model_error
from rawserver import Raw, RawServer
from weather_tools import agent

from convo import (
    ContextLengthError,
    Document,
    Image,
    Message,
    ModelError,
    Runner,
    RunStatus,
    Session,
    ToolCall,
)
from convo._parts import Text
from convo._reply import Finish
from convo.models import AnthropicModel
from convo.models._deltas import Deltas
from convo.templates import AssistantTemplate, LinearTemplate, SystemTemplate, UserTemplate
from convo.testing import AnthropicServer, ErrorReply

THOUGHT = {"type": "thinking", "thinking": "Two cities: call both.", "signature": "sig-A"}
LATER = {"type": "redacted_thinking", "data": "opaque-B"}
EPH = {"type": "ephemeral"}


def both_cities() -> Message:
    return Message.assistant("Checking.", [ToolCall("toolu_1", "weather", {"city": "Oslo"}),
                                           ToolCall("toolu_2", "weather", {"city": "Rome"})],
                             reasoning=[THOUGHT])


def claude(server: AnthropicServer, **kw: Any) -> AnthropicModel:
    kw.setdefault("max_retries", 0)
    kw.setdefault("thinking", {"type": "enabled", "budget_tokens": 1024})
    return AnthropicModel("claude-x", base_url=server.base_url, api_key="k", **kw)


AFTER_TOOLS = [
    {"role": "user", "content": [{"type": "text", "text": "Oslo and Rome?"}]},
    {"role": "assistant", "content": [
        THOUGHT, {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny in Oslo"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Sunny in Rome",
         "cache_control": EPH}]},
]


@pytest.mark.parametrize(("stream", "asynchronous"),
                         [(False, False), (True, False), (False, True), (True, True)])
def test_parallel_tool_calls_with_thinking_sent_back_in_place(
        anthropic_server: AnthropicServer, stream: bool, asynchronous: bool) -> None:
    anthropic_server.add(both_cities(), Message.assistant("Both sunny.", reasoning=[LATER]))
    with claude(anthropic_server, stream=stream) as model:
        runner = Runner(model, agent("Oslo and Rome?"))
        session = asyncio.run(runner.arun()) if asynchronous else runner.run()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool",
                                                  "tool", "assistant"]
    assert session.messages[2].reasoning == (THOUGHT,)
    assert session.messages[2].finish is Finish.TOOL_CALLS
    assert session.messages[-1].reasoning == (LATER,)
    assert session.messages[-1].text == "Both sunny."
    first, second = anthropic_server.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert first["system"] == [{"type": "text", "text": "You are an agent.",
                                "cache_control": EPH}]
    assert first["tools"][0]["name"] == "weather" and first["tools"][0]["cache_control"] == EPH
    assert second["messages"] == AFTER_TOOLS
    assert first.get("stream", False) is stream


def test_a_resumed_conversation_sends_its_thinking_in_place(anthropic_server: AnthropicServer
                                                            ) -> None:
    anthropic_server.add(both_cities(), "Both sunny.", "You are welcome.")
    with claude(anthropic_server) as model:
        first = Runner(model, agent("Oslo and Rome?")).run()
        saved = Session.from_json(first.to_json())
        more = LinearTemplate([UserTemplate("Thanks!"), AssistantTemplate()])
        Runner(model, more).run(saved)
    third = anthropic_server.requests[2]["messages"]
    assert third[1] == AFTER_TOOLS[1]
    assert third[-1] == {"role": "user", "content": [
        {"type": "text", "text": "Thanks!", "cache_control": EPH}]}


def test_another_providers_reasoning_is_left_out(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add("Fine.")
    history = [Message("user", "Hi"),
               Message.assistant("Hello", reasoning=[{"type": "reasoning", "id": "rs_1"}]),
               Message("user", "Again")]
    with claude(anthropic_server, cache=False) as model:
        model.complete(history)
    assert anthropic_server.requests[0]["messages"][1] == {
        "role": "assistant", "content": [{"type": "text", "text": "Hello"}]}


def test_images_a_pdf_and_a_later_system_message(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add("A chart and a report.")
    history = [Message("system", "Describe."), Message("user", "Hi"),
               Message("assistant", "Hello"), Message("system", "Be short."),
               Message("user", (Text("What are these?"),
                                Image(b"\x89PNG", media_type="image/png"),
                                Document(b"%PDF-1.7", media_type="application/pdf",
                                         filename="report.pdf")))]
    with claude(anthropic_server, cache=False) as model:
        reply = model.complete(history)
    assert reply.text == "A chart and a report."
    assert anthropic_server.requests[0]["messages"][-1] == {"role": "user", "content": [
        {"type": "text", "text": "<system>Be short.</system>"},
        {"type": "text", "text": "What are these?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw=="}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": "JVBERi0xLjc="}, "title": "report.pdf"}]}


def test_usage_and_cache_tokens_add_up_in_the_outcome(anthropic_server: AnthropicServer
                                                      ) -> None:
    anthropic_server.add(both_cities(), "Both sunny.")
    with claude(anthropic_server) as model:
        session = Runner(model, agent("Oslo and Rome?")).run()
    replies = [m.usage for m in session.messages if m.role == "assistant"]
    assert all(u is not None for u in replies)
    first, second = replies
    assert first is not None and second is not None
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    assert second.cache_read_tokens == first.cache_write_tokens  # read what the first wrote
    assert second.cache_write_tokens > 0
    assert session.outcome is not None
    usage = session.outcome.usage
    assert usage.cache_read_tokens == first.cache_read_tokens + second.cache_read_tokens
    assert usage.cache_write_tokens == first.cache_write_tokens + second.cache_write_tokens
    assert usage.prompt_tokens == first.prompt_tokens + second.prompt_tokens
    assert usage.prompt_tokens >= usage.cache_read_tokens + usage.cache_write_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_streamed_text_and_thinking_reach_their_callbacks(anthropic_server: AnthropicServer,
                                                          stream: bool) -> None:
    anthropic_server.add(Message.assistant("It is sunny in Oslo today.", reasoning=[THOUGHT]))
    texts: list[str] = []
    thoughts: list[str] = []
    with claude(anthropic_server, stream=stream) as model:
        reply = model.complete([Message("user", "Oslo?")],
                               on_delta=Deltas(texts.append, thoughts.append))
    assert reply.text == "It is sunny in Oslo today." and reply.reasoning == (THOUGHT,)
    if stream:
        assert "".join(thoughts) == THOUGHT["thinking"] and len(thoughts) == 3
        assert "".join(texts) == reply.text and len(texts) == 4
    else:
        assert texts == [] and thoughts == []


def test_max_tokens_is_a_truncated_reply_and_a_refusal_is_marked(
        anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(Message.assistant("Once upon", finish=Finish.LENGTH),
                         Message.assistant("", refusal="refused"))
    with claude(anthropic_server) as model:
        cut = model.complete([Message("user", "A story?")])
        refused = model.complete([Message("user", "Something bad")])
    assert (cut.text, cut.finish) == ("Once upon", Finish.LENGTH)
    assert (refused.finish, refused.refusal) == (Finish.REFUSED, "refused")


def test_a_429_and_a_529_are_retried_by_the_sdk(anthropic_server: AnthropicServer) -> None:
    anthropic_server.add(ErrorReply(429, {"retry-after": "0"}),
                         ErrorReply(529, {"retry-after": "0"}), "At last.")
    with claude(anthropic_server, max_retries=2) as model:
        assert model.complete([Message("user", "Hi")]).text == "At last."
    assert anthropic_server.received == 3


@pytest.mark.parametrize(("reply", "error", "said"), [
    (ErrorReply(429), ModelError, "HTTP 429 (rate_limit_error) from"),
    (ErrorReply(529), ModelError, "Anthropic is overloaded (with retries off)"),
    (ErrorReply(401), ModelError, "Check the API key (api_key= or ANTHROPIC_API_KEY)"),
    (ErrorReply(400, body={"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
     ContextLengthError, "prompt is too long: 210000 tokens > 200000 maximum."),
])
def test_http_errors_are_model_errors(anthropic_server: AnthropicServer, reply: ErrorReply,
                                      error: type[Exception], said: str) -> None:
    anthropic_server.add(reply)
    check_model_error(claude(anthropic_server), error, said,
                      f"from {anthropic_server.base_url} (model 'claude-x')")


def test_no_key_and_no_base_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(ModelError, match="AnthropicModel has no API key: set "
                                         "ANTHROPIC_API_KEY or pass api_key="):
        AnthropicModel().complete([Message("user", "Hi")])


def test_the_base_url_and_key_come_from_the_environment(anthropic_server: AnthropicServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
    anthropic_server.add("Hello.")
    with AnthropicModel("claude-x") as model:
        assert model.complete([Message("user", "Hi")]).text == "Hello."
    assert anthropic_server.requests[0]["max_tokens"] == 4096


def test_a_max_tokens_the_sdk_will_not_send_plainly_is_streamed(
        anthropic_server: AnthropicServer) -> None:
    anthropic_server.add("A long answer.")
    texts: list[str] = []
    with claude(anthropic_server, max_tokens=128_000) as model:
        reply = model.complete([Message("user", "Hi")], on_delta=texts.append)
    assert reply.text == "A long answer." and texts == []  # stream=False shows nothing early
    assert anthropic_server.requests[0]["stream"] is True
    assert anthropic_server.requests[0]["max_tokens"] == 128_000


def test_twenty_turns_read_most_of_their_input_from_the_cache(anthropic_server: AnthropicServer
                                                              ) -> None:
    turns = 20
    anthropic_server.add(*(f"Answer number {n}: " + "words " * 40 for n in range(turns)))
    template = LinearTemplate(
        [SystemTemplate("You are a patient tutor. " * 20)]
        + [step for n in range(turns)
           for step in (UserTemplate(f"Question {n}: tell me more " * 5), AssistantTemplate())])
    with claude(anthropic_server, thinking=None) as model:
        session = Runner(model, template).run()
    usages = [m.usage for m in session.messages if m.role == "assistant"]
    assert len(usages) == turns and all(u is not None for u in usages)
    later = [u for u in usages[2:] if u is not None]
    read = sum(u.cache_read_tokens for u in later)
    total = sum(u.prompt_tokens for u in later)
    assert read >= 0.8 * total, (read, total)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(("body", "said"), [
    (b"<html>a proxy's page</html>", "the reply is not JSON (JSONDecodeError): b\"<html>a "),
    (b'{"type": "message", "content": "Hi"}', "expected a Messages API response with a "
                                              "'content' list"),
])
def test_a_reply_that_is_no_message_is_a_model_error(body: bytes, said: str,
                                                      asynchronous: bool) -> None:
    with RawServer(Raw([body])) as server:
        model = AnthropicModel("claude-x", base_url=f"http://127.0.0.1:{server.port}",
                               api_key="k", max_retries=0)
        call = model.acomplete if asynchronous else model.complete
        with pytest.raises(ModelError) as caught:
            result = call([Message("user", "Hi")])
            if asynchronous:
                asyncio.run(result)  # type: ignore[arg-type]
        model.close()
    assert str(caught.value).startswith(f"malformed reply from http://127.0.0.1:{server.port} "
                                        f"(model 'claude-x'): {said}")


# -- the unstreamed call on convo's own client: the client's post, not messages.create ---------

def _counting_create(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Counts the calls of the SDK's ``Messages.create`` (the real one runs)."""
    import anthropic.resources.messages as messages_module

    calls: list[dict[str, Any]] = []
    real = messages_module.Messages.create

    def create(self: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(self, **kwargs)

    monkeypatch.setattr(messages_module.Messages, "create", create)
    return calls


def test_an_unstreamed_call_posts_the_body_as_it_is(anthropic_server: AnthropicServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_create(monkeypatch)
    anthropic_server.add("Sunny.", ErrorReply(429, headers={"retry-after": "0"}), "Rain.")
    with AnthropicModel("claude-test", base_url=anthropic_server.base_url, api_key="k",
                        temperature=0.5, stop_sequences=["END"]) as model:
        first = model.complete([Message("system", "Be brief."), Message("user", "Oslo?")])
        second = model.complete([Message("user", "Bergen?")])  # a 429, retried by the SDK
    assert (first.text, second.text, calls) == ("Sunny.", "Rain.", [])
    assert anthropic_server.requests[0] == {
        "model": "claude-test", "max_tokens": 4096, "temperature": 0.5,
        "stop_sequences": ["END"],
        "system": [{"type": "text", "text": "Be brief.", "cache_control": EPH}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Oslo?", "cache_control": EPH}]}]}
    assert len(anthropic_server.requests) == 3


@pytest.mark.parametrize("how", ["injected client", "thinking", "extra_headers",
                                 "large max_tokens"])
def test_other_calls_go_through_messages_create(anthropic_server: AnthropicServer,
                                                monkeypatch: pytest.MonkeyPatch,
                                                how: str) -> None:
    import anthropic

    calls = _counting_create(monkeypatch)
    anthropic_server.add("Sunny.")
    options: dict[str, Any] = {
        "injected client": {"client": anthropic.Anthropic(base_url=anthropic_server.base_url,
                                                          api_key="k")},
        "thinking": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        "extra_headers": {"extra_headers": {"X-Mine": "1"}},
        "large max_tokens": {"max_tokens": 16000},
    }[how]
    with AnthropicModel("claude-test", base_url=anthropic_server.base_url, api_key="k",
                        **options) as model:
        assert model.complete([Message("user", "Oslo?")]).text == "Sunny."
    assert len(calls) == 1


# -- a conversation with no user message yet ---------------------------------------------------

def test_a_bot_that_speaks_first_sends_its_system_messages_as_the_user_turn(
        anthropic_server: AnthropicServer) -> None:
    anthropic_server.add("Hello! How can I help?")
    template = LinearTemplate([SystemTemplate("You are a barista."),
                               SystemTemplate("Greet the customer."), AssistantTemplate()])
    with AnthropicModel("claude-test", base_url=anthropic_server.base_url,
                        api_key="k") as model:
        session = Runner(model, template).run()
    assert session.messages[-1].text == "Hello! How can I help?"
    assert anthropic_server.requests[0]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "You are a barista."},
        {"type": "text", "text": "Greet the customer.", "cache_control": EPH}]}]
    assert "system" not in anthropic_server.requests[0]


def test_an_empty_conversation_is_a_model_error_before_any_request(
        anthropic_server: AnthropicServer) -> None:
    with AnthropicModel("claude-test", base_url=anthropic_server.base_url,
                        api_key="k") as model, pytest.raises(ModelError) as caught:
        model.complete([])
    assert str(caught.value) == ("the Anthropic Messages API needs at least one message; the "
                                 "conversation is empty: start it with a system or user "
                                 "message")
    assert anthropic_server.requests == []
