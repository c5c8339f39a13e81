"""The OpenAI face's Responses API (API.md §25) through the real ``openai`` SDK's responses
API, streamed and not: ``previous_response_id``, ``conversation``, a conversation that
waits (``incomplete``, reason ``waiting``), a failed model call (``response.failed``); and
the stateless replay of histories holding the template's own words."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from openai_kit import (
    ANN,
    BOB,
    HEADER,
    Counted,
    client,
    closed_clients,  # noqa: F401  (an autouse fixture)
    served,
)

from convo.models import FunctionModel
from convo.templates import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate


def messages(url: str, conversation: str) -> list[tuple[str, str]]:
    body = httpx.get(f"{url}/api/conversations/{conversation}",
                     headers={"Authorization": f"Bearer {ANN}"}).json()
    return [(m["role"], m["content"]) for m in body["messages"]]


def test_a_response_starts_a_conversation_that_later_responses_continue() -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        bot = client(url)
        first = bot.responses.create(model="m", input="hi")
        conversation = first.conversation.id  # type: ignore[union-attr]
        second = bot.responses.create(model="m", input="two", previous_response_id=first.id)
        third = bot.responses.create(model="m", input=[
            {"role": "user", "content": "three"}], conversation=conversation)
        forked = bot.responses.create(model="m", input="again", previous_response_id=first.id)
        fork = forked.conversation.id  # type: ignore[union-attr]
        on_fork = messages(url, fork)
        parent = httpx.get(f"{url}/api/conversations/{fork}",
                           headers={"Authorization": f"Bearer {ANN}"}).json()["parent"]
        with pytest.raises(openai.NotFoundError) as theirs:
            client(url, BOB).responses.create(model="m", input="x",
                                              previous_response_id=third.id)
        with pytest.raises(openai.NotFoundError) as unknown:
            bot.responses.create(model="m", input="x", conversation="nowhere")
        shown = messages(url, conversation)
    assert (first.output_text, second.output_text, third.output_text) == (
        "You said 'hi'", "You said 'two'", "You said 'three'")
    assert first.status == third.status == "completed"
    assert third.model == "Chat"
    assert second.conversation.id == conversation  # type: ignore[union-attr]
    assert shown[1:] == [("user", "hi"), ("assistant", "You said 'hi'"), ("user", "two"),
                         ("assistant", "You said 'two'"), ("user", "three"),
                         ("assistant", "You said 'three'")]
    # An earlier response forks the conversation before the message that followed it (§28):
    # the fork holds the first exchange and the new one; the original is unchanged.
    assert forked.output_text == "You said 'again'" and fork != conversation
    assert on_fork[1:] == [("user", "hi"), ("assistant", "You said 'hi'"), ("user", "again"),
                           ("assistant", "You said 'again'")]
    assert parent == {"id": conversation, "before": 3}
    assert counted.calls == 4  # the fork's reply only: nothing of the prefix is called again
    assert theirs.value.body["message"] == f"no conversation {conversation!r}"  # type: ignore[index]
    assert unknown.value.body["param"] == "conversation"  # type: ignore[index]


def test_a_streamed_response_sends_text_deltas_then_completed() -> None:
    with served() as url:
        events = list(client(url).responses.create(model="m", input="hello", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == \
        "You said 'hello'"
    final: Any = events[-1]
    assert final.response.output_text == "You said 'hello'"
    assert final.response.id == events[0].response.id  # type: ignore[union-attr]
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_a_waiting_bot_answers_incomplete_with_reason_waiting() -> None:
    with served() as url:
        bot = client(url)
        answer = bot.responses.with_raw_response.create(model="m", input="refund A1")
        streamed = list(bot.responses.create(model="m", input="refund B2", stream=True))
    waiting = answer.parse()
    conversation = answer.headers[HEADER]
    assert waiting.status == "incomplete"
    assert waiting.incomplete_details.reason == "waiting"  # type: ignore[union-attr,comparison-overlap]
    assert waiting.output_text.startswith('Waiting for you to approve or reject: refund({"order": '
                                          f'"A1"}}). In conversation {conversation}')
    assert streamed[-1].type == "response.incomplete"


def test_a_failed_model_call_ends_the_stream_with_response_failed() -> None:
    with served() as url:
        events = list(client(url).responses.create(model="m", input="fail", stream=True))
        with pytest.raises(openai.InternalServerError) as caught:
            client(url).responses.create(model="m", input="fail")
    assert events[-1].type == "response.failed"
    assert events[-1].response.error.message == (  # type: ignore[union-attr]
        "The assistant could not answer. Please try again.")
    assert caught.value.status_code == 502


def test_a_history_missing_the_greeting_and_holding_joined_words_is_replayed() -> None:
    """The client holds no greeting (the bot said it before the first ask) and holds the
    scripted "Noted." joined to the model's reply after it: both are the template's own."""
    calls: list[str] = []

    def echo(said: Any, tools: Any) -> str:
        calls.append(said[-2].text)
        return f"You said {said[-2].text!r}"

    template = LinearTemplate([AssistantTemplate("Hello! What can I do for you?"),
                               LoopTemplate([UserTemplate(), AssistantTemplate("Noted."),
                                             AssistantTemplate()])])
    with served(template, FunctionModel(echo)) as url:
        bot = client(url)
        first = bot.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
        reply = first.parse().choices[0].message.content
        again = bot.chat.completions.with_raw_response.create(model="m", messages=[
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": reply},
            {"role": "user", "content": "more"}])
        shown = messages(url, again.headers[HEADER])
    assert reply == "Noted.\n\nYou said 'hi'"
    assert again.parse().choices[0].message.content == "Noted.\n\nYou said 'more'"
    assert shown == [("assistant", "Hello! What can I do for you?"), ("user", "hi"),
                     ("assistant", "Noted."), ("assistant", "You said 'hi'"),
                     ("user", "more"), ("assistant", "Noted."),
                     ("assistant", "You said 'more'")]
    assert calls == ["hi", "more"]  # the replayed reply made no call


def test_a_bot_that_speaks_first_with_its_model_makes_that_call_for_a_new_history() -> None:
    template = LinearTemplate([AssistantTemplate(), LoopTemplate([UserTemplate(),
                                                                  AssistantTemplate()])])
    model = FunctionModel(lambda messages, tools: f"({len(messages)} before me)")
    with served(template, model) as url:
        answer = client(url).responses.create(model="m", input="hi")
        shown = messages(url, answer.conversation.id)  # type: ignore[union-attr]
    assert answer.output_text == "(2 before me)"
    assert shown == [("assistant", "(0 before me)"), ("user", "hi"),
                     ("assistant", "(2 before me)")]
