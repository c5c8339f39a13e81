"""convo against a real small model: SmolLM2-135M-Instruct served by llama-cpp-python.

A 135M model writes what it writes: these tests assert what convo guarantees whatever the
model says (every run ends with an Outcome; calls are parsed or fed back; nothing is lost),
and use a JSON-schema constrained reply (the server's grammar support) where a real tool call
must happen.
"""

from __future__ import annotations

from typing import Any

import pytest
from weather_tools import answer, weather

from convo import Message, ModelError, OpenAIModel, Runner, RunStatus, Session
from convo.events import Event, ModelCallStarted, TextDelta, ToolCallsRecovered
from convo.models._openai.text_protocol import tools_prompt
from convo.models._text_tools import MALFORMED_CALL
from convo.templates import LinearTemplate, SystemTemplate, ToolingTemplate, UserTemplate
from convo.testing._llama import LlamaServer
from convo.tools import FinishTool


def model(llama: LlamaServer, **kw: Any) -> OpenAIModel:
    kw.setdefault("max_tokens", 24)
    return OpenAIModel(llama.model, base_url=llama.base_url, temperature=0, max_retries=0,
                       timeout=120, **kw)


def chat(question: str = "Say hello.") -> LinearTemplate:
    from convo import AssistantTemplate

    return LinearTemplate([SystemTemplate("You are brief."), UserTemplate(question),
                           AssistantTemplate()])


def constrained(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A response_format that makes the model write exactly one call of ``name``."""
    return {"type": "json_object", "schema": {
        "type": "object", "required": ["name", "arguments"],
        "properties": {"name": {"const": name}, "arguments": {
            "type": "object", "properties": arguments, "required": list(arguments)}}}}


def check_nothing_lost(session: Session) -> None:
    """Every call is answered by exactly one tool message, in order, right after it."""
    messages = session.messages
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            answers = messages[i + 1:i + 1 + len(message.tool_calls)]
            assert [m.tool_call_id for m in answers] == [c.id for c in message.tool_calls]
    assert session.outcome is not None
    assert session.outcome.status is not RunStatus.ERROR, session.outcome.error


def test_chat_with_usage(llama: LlamaServer) -> None:
    with model(llama) as m:
        session = Runner(m, chat()).run()
    reply = session.messages[-1]
    assert reply.role == "assistant" and reply.content.strip()
    assert reply.metadata["finish_reason"] in ("stop", "length")
    usage = session.outcome.usage if session.outcome else None
    assert usage is not None and usage.prompt_tokens > 10 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_streaming_deltas_make_the_reply(llama: LlamaServer) -> None:
    events: list[Event] = []
    with model(llama, stream=True) as m:
        session = Runner(m, chat(), on_event=events.append).run()
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == session.messages[-1].content


def test_a_context_length_error_is_surfaced_whole(llama: LlamaServer) -> None:
    with model(llama) as m, pytest.raises(ModelError) as info:
        m.complete([Message("user", "word " * 2000)])
    text = str(info.value)
    assert text.startswith(f"HTTP 400 Bad Request from {llama.base_url}")
    assert "maximum context length is 1024 tokens" in text
    assert "Please reduce the length of the messages or completion." in text


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_text_tool_format_whatever_the_model_writes(llama: LlamaServer, stream: bool) -> None:
    events: list[Event] = []
    template = LinearTemplate([
        SystemTemplate("You answer questions about the weather."),
        UserTemplate("What is the weather in Oslo?"),
        ToolingTemplate([weather, FinishTool()], max_iterations=3),
    ])
    with model(llama, tool_format="text", stream=stream, max_tokens=48) as m:
        session = Runner(m, template, on_event=events.append).run()
    check_nothing_lost(session)
    assert session.outcome is not None and session.outcome.turn is not None
    calls = sum(isinstance(e, ModelCallStarted) for e in events)
    assert 1 <= calls <= 3
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "<tool_call>" not in shown
    for message in session.messages:
        errors = message.metadata.get("tool_call_errors") or {}
        assert all(c.name == MALFORMED_CALL for c in message.tool_calls if c.id in errors)


def test_text_tool_format_sends_the_tools_in_the_prompt(llama: LlamaServer) -> None:
    with model(llama, tool_format="text") as m:
        request = m.request([Message("system", "Hi."), Message("user", "x")],
                            [weather.schema()])
    assert "tools" not in request
    assert request["messages"][0]["content"] == "Hi.\n\n" + tools_prompt([weather.schema()])


@pytest.mark.parametrize("tool_format", ["native", "text"])
def test_a_constrained_reply_is_a_real_tool_call_that_runs(llama: LlamaServer,
                                                           tool_format: str) -> None:
    # The server's default chat handler ignores native tools; the JSON schema makes the
    # model write the call as text, which convo reads (recovery, or the text format).
    events: list[Event] = []
    template = LinearTemplate([UserTemplate("Answer: what is 2+2?"),
                               ToolingTemplate([answer])])
    text = {"type": "string", "maxLength": 20}
    with model(llama, tool_format=tool_format, max_tokens=96,
               response_format=constrained("answer", {"text": text})) as m:
        session = Runner(m, template, on_event=events.append).run()
    check_nothing_lost(session)
    [call] = [c for msg in session.messages for c in msg.tool_calls]
    assert call.name == "answer" and isinstance(call.arguments["text"], str)
    assert session.messages[-1] == Message("assistant", f"Answer: {call.arguments['text']}")
    assert session.outcome is not None and session.outcome.turn is not None
    assert session.outcome.turn.terminated_by == "answer"
    recovered = [e.form for e in events if isinstance(e, ToolCallsRecovered)]
    assert recovered == ["json"]


def test_a_tool_loop_sends_content_the_server_takes(llama: LlamaServer) -> None:
    # llama-cpp-python answers HTTP 500 to "content": null on a tool-calls-only message:
    # the second call of this loop is the one that used to fail.
    template = LinearTemplate([UserTemplate("Weather in Oslo?"),
                               ToolingTemplate([weather], max_iterations=2)])
    with model(llama, max_tokens=64,
               response_format=constrained("weather", {"city": {"enum": ["Oslo"]}})) as m:
        session = Runner(m, template).run()
    check_nothing_lost(session)
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.MAX_ITERATIONS
    assert session.outcome.model_calls == 2
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant",
                                                  "tool"]
