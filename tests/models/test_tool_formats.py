"""Both tool formats through the whole stack: Runner -> ToolingTemplate -> OpenAIModel -> the
real openai SDK -> OpenAIServer on 127.0.0.1 (API.md §12)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from weather_tools import answer, weather

from convo import Message, OpenAIModel, Runner, RunStatus, ScriptedInterface, Session
from convo._resume import resume
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import Event, TextDelta, ToolCallsRecovered
from convo.models._text_tools import MALFORMED_CALL
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.testing import OpenAIServer
from convo.tools import EndConversationTool, FinishTool


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


def turn(*tools: Any, **kw: Any) -> LinearTemplate:
    return LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Weather in Oslo?"),
                           ToolingTemplate(list(tools), **kw)])


def run(server: OpenAIServer, api: str, template: Any, events: list[Event] | None = None,
        **kw: Any) -> Session:
    with OpenAIModel("m", base_url=server.base_url, max_retries=0, api=api, **kw) as model:
        on_event = events.append if events is not None else None
        return Runner(model, template, on_event=on_event).run()


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    """The API a behaviour test runs on: each runs on both (API.md §15)."""
    param: str = request.param
    return param


def sent(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a request sent: Chat Completions' ``messages``, the Responses API's
    ``input`` (the same items, in the text format, which sends no tool-call items)."""
    items: list[dict[str, Any]] = request.get("messages", request.get("input"))
    return items


def messages(session: Session) -> list[tuple[str, str, list[str]]]:
    return [(m.role, m.content, [c.name for c in m.tool_calls]) for m in session.messages]


# -- the text format ------------------------------------------------------------------------


def test_text_format_sends_no_native_tools_and_reads_the_call(api: str,
                                                               server: OpenAIServer) -> None:
    server.add("Let me look.\n" + call("weather", '{"city": "Oslo"}'), "Sunny in Oslo.")
    session = run(server, api, turn(weather), tool_format="text")
    assert messages(session) == [
        ("system", "Be brief.", []), ("user", "Weather in Oslo?", []),
        ("assistant", "Let me look.", ["weather"]), ("tool", "Sunny in Oslo", []),
        ("assistant", "Sunny in Oslo.", []),
    ]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    first, second = server.requests
    assert "tools" not in first and "tool_choice" not in first
    system = sent(first)[0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.\n\nYou can call these tools:\n\n- weather:")
    assert sent(second)[2:] == [
        {"role": "assistant",
         "content": 'Let me look.\n<tool_call>\n{"name": "weather", "arguments": '
                    '{"city": "Oslo"}}\n</tool_call>'},
        {"role": "user",
         "content": '<tool_response name="weather">\nSunny in Oslo\n</tool_response>'},
    ]


def test_text_format_parallel_calls_then_finish(api: str, server: OpenAIServer) -> None:
    server.add(call("weather", '{"city": "Oslo"}') + "\n" + call("weather", '{"city": "Rome"}'),
               "Sunny in both.\n" + call("finish", "{}"))
    session = run(server, api, turn(weather, FinishTool()), tool_format="text")
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Sunny in Oslo", "Sunny in Rome", "Finished"]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.turn is not None
    assert session.outcome.turn.terminated_by == "finish"
    assert sent(server.requests[1])[-1]["content"] == (
        '<tool_response name="weather">\nSunny in Oslo\n</tool_response>\n'
        '<tool_response name="weather">\nSunny in Rome\n</tool_response>')


def test_text_format_terminal_tool(api: str, server: OpenAIServer) -> None:
    server.add(call("answer", '{"text": "sunny"}'))
    session = run(server, api, turn(answer), tool_format="text")
    assert session.messages[-1] == Message("assistant", "Answer: sunny")
    assert session.outcome is not None and session.outcome.turn is not None
    assert session.outcome.turn.terminated_by == "answer"


def test_text_format_end_conversation(api: str, server: OpenAIServer) -> None:
    server.add(call("end_conversation", '{"message": "Bye!"}'))
    session = run(server, api, turn(EndConversationTool()), tool_format="text")
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    assert session.outcome.farewell == "Bye!"


def test_a_malformed_call_is_fed_back_with_the_format(api: str, server: OpenAIServer) -> None:
    server.add('<tool_call>{"name": "weather", "arguments": {city: Oslo}}</tool_call>',
               call("weather", '{"city": "Oslo"}'), "Sunny.")
    session = run(server, api, turn(weather), tool_format="text")
    assert [c.name for m in session.messages for c in m.tool_calls] == [MALFORMED_CALL,
                                                                        "weather"]
    assert session.messages[2].metadata["tool_call_errors"]
    fed_back = sent(server.requests[1])[-1]["content"]
    assert fed_back.startswith(f'<tool_response name="{MALFORMED_CALL}">\nError: your tool '
                               "call could not be read: the <tool_call> block is not valid "
                               "JSON (Expecting property name enclosed in double quotes")
    assert fed_back.endswith('exactly like this:\n<tool_call>\n{"name": "weather", '
                             '"arguments": {"city": "..."}}\n</tool_call>\n</tool_response>')
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_text_format_streams_the_text_but_never_the_call(api: str, server: OpenAIServer) -> None:
    server.add("Let me look.\n" + call("weather", '{"city": "Oslo"}'), "Sunny in Oslo.")
    events: list[Event] = []
    session = run(server, api, turn(weather), events, tool_format="text", stream=True)
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "Let me look.\nSunny in Oslo."
    assert messages(session)[2] == ("assistant", "Let me look.", ["weather"])


def test_text_format_async(api: str, server: OpenAIServer) -> None:
    server.add(call("weather", '{"city": "Oslo"}'), "Sunny.")

    async def main() -> Session:
        async with OpenAIModel("m", base_url=server.base_url, tool_format="text",
                               api=api) as model:
            return await Runner(model, turn(weather)).arun()

    session = asyncio.run(main())
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool",
                                                  "assistant"]


def test_text_format_survives_a_transcript_and_resume(api: str, server: OpenAIServer,
                                                      tmp_path: Path) -> None:
    chat = LoopTemplate([UserTemplate(), ToolingTemplate([weather])])
    path = tmp_path / "chat.jsonl"
    server.add("<tool_call>{oops</tool_call>", call("weather", '{"city": "Oslo"}'), "Sunny.")
    session = Session()
    writer = TranscriptWriter.create(path, session)
    with OpenAIModel("m", base_url=server.base_url, tool_format="text",
                               api=api) as model:
        Runner(model, chat, ScriptedInterface(["Oslo?"]), on_event=writer).run(session)
    writer.close()
    saved = load_transcript(path)
    assert saved.messages == session.messages  # metadata (the malformed call's problem) too
    server.add("Cloudy.")
    template, resumed = resume(chat, saved)
    with OpenAIModel("m", base_url=server.base_url, tool_format="text",
                               api=api) as model:
        Runner(model, template, ScriptedInterface(["Rome?"])).run(resumed)
    assert resumed.messages[-1] == Message("assistant", "Cloudy.", metadata={
        "finish_reason": "stop", "usage": resumed.messages[-1].metadata["usage"]})
    last = sent(server.requests[-1])
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant",
                                         "user", "assistant", "user"]
    assert "could not be read" in last[3]["content"]
    assert last[-1]["content"] == "Rome?"


# -- the native format ----------------------------------------------------------------------


def test_native_sends_tool_choice_auto_and_content_not_null(server: OpenAIServer) -> None:
    server.add("{weather(city='Oslo')}", "Sunny.")
    run(server, "chat", turn(weather))
    first, second = server.requests
    assert first["tool_choice"] == "auto"
    assert second["messages"][2]["content"] == ""


@pytest.mark.parametrize(("choice", "sent"), [(None, None), ("required", "required")])
def test_tool_choice_can_be_changed(server: OpenAIServer, choice: Any, sent: Any) -> None:
    server.add("Hi.")
    run(server, "chat", turn(weather), tool_choice=choice)
    assert server.requests[0].get("tool_choice") == sent


def test_a_leaked_call_is_recovered_visibly(api: str, server: OpenAIServer) -> None:
    server.add('{"name": "weather", "arguments": {"city": "Oslo"}}', "Sunny.")
    events: list[Event] = []
    session = run(server, api, turn(weather), events)
    reply = session.messages[2]
    assert (reply.content, [c.name for c in reply.tool_calls]) == ("", ["weather"])
    assert reply.metadata["recovered_tool_calls"] == "json"
    recovered = [e for e in events if isinstance(e, ToolCallsRecovered)]
    assert [(len(e.calls), e.form) for e in recovered] == [(1, "json")]
    assert session.messages[3].content == "Sunny in Oslo"
    sent_call = sent(server.requests[1])[2]
    name = sent_call["name"] if api == "responses" else sent_call["tool_calls"][0]["function"][
        "name"]
    assert name == "weather"


def test_recovery_switched_off_leaves_the_text(api: str, server: OpenAIServer) -> None:
    text = '{"name": "weather", "arguments": {"city": "Oslo"}}'
    server.add(text)
    session = run(server, api, turn(weather), recover_tool_calls=False)
    assert messages(session)[-1] == ("assistant", text, [])


def test_text_that_is_not_a_call_stays_text(api: str, server: OpenAIServer) -> None:
    text = 'Use {"name": "weather", "arguments": {}} to ask.'
    server.add(text)
    events: list[Event] = []
    session = run(server, api, turn(weather), events)
    assert messages(session)[-1] == ("assistant", text, [])
    assert not any(isinstance(e, ToolCallsRecovered) for e in events)


def test_an_unknown_tool_format_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_format must be 'native' or 'text', got 'xml'"):
        OpenAIModel("m", tool_format="xml")
