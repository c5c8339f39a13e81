"""The OpenAI face's Chat Completions (API.md §25), through the real ``openai`` SDK (sync,
async, streaming) against a served bot under uvicorn: stateless replay, keyed
continuation, waiting and ended conversations, usage, errors, sign-in and keys."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from openai_kit import (
    ANN,
    BOB,
    HEADER,
    ONCE,
    Counted,
    client,
    closed_clients,  # noqa: F401  (an autouse fixture)
    served,
)
from serve_kit import TEMPLATE

from convo import OpenAIModel
from convo.testing import OpenAIServer


def stored(url: str, conversation: str, token: str = ANN) -> dict[str, Any]:
    answer = httpx.get(f"{url}/api/conversations/{conversation}",
                       headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def said(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"]]


def test_models_names_the_bot_and_needs_the_token() -> None:
    with served(title="Support bot") as url:
        assert [m.id for m in client(url).models.list()] == ["Support bot"]
        with pytest.raises(openai.AuthenticationError) as caught:
            client(url, "wrong").models.list()
        assert caught.value.status_code == 401
        assert caught.value.body["type"] == "authentication_error"  # type: ignore[index]
    with served(model_name="helpdesk", title="Support bot") as url:
        assert [m.id for m in client(url).models.list()] == ["helpdesk"]


def test_a_stateless_history_is_replayed_without_model_calls_and_answered() -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        raw = client(url).chat.completions.with_raw_response.create(model="anything", messages=[
            {"role": "system", "content": "the client's own, ignored"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello from before"},
            {"role": "user", "content": "again"}])
        answer = raw.parse()
        conversation = raw.headers[HEADER]
        assert answer.choices[0].message.content == "You said 'again'"
        assert answer.choices[0].finish_reason == "stop"
        assert answer.model == "Chat"  # create_app's title
        assert counted.calls == 1  # the client's assistant message answered the first call
        body = stored(url, conversation)
    assert said(body) == [("system", "Be brief."), ("user", "hi"),
                          ("assistant", "Hello from before"), ("user", "again"),
                          ("assistant", "You said 'again'")]
    assert all(m["id"] for m in body["messages"])
    assert body["status"] == "waiting"


def test_a_history_the_bot_cannot_have_produced_is_400_naming_its_index() -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        with pytest.raises(openai.BadRequestError) as caught:
            client(url).chat.completions.create(model="m", messages=[
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "one"},
                {"role": "assistant", "content": "two"}, {"role": "user", "content": "x"}])
        refused = httpx.post(f"{url}/v1/chat/completions", headers={
            "Authorization": f"Bearer {ANN}"}, json={"model": "m", "messages": [
                {"role": "assistant", "content": "one"}, {"role": "user", "content": "x"}]})
        listed = httpx.get(f"{url}/api/conversations",
                           headers={"Authorization": f"Bearer {ANN}"}).json()
    assert caught.value.body == {  # type: ignore[comparison-overlap]
        "message": "messages[2] is not what the bot waits for there: it waits for a user "
                   "message; the conversation cannot have gone this way",
        "type": "invalid_request_error", "param": "messages", "code": None}
    assert counted.calls == 0 and listed["conversations"] == []  # nothing kept
    assert refused.status_code == 400 and HEADER not in refused.headers


def test_a_keyed_conversation_is_created_then_continued_with_the_trailing_messages() -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        bot = client(url)
        first = bot.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "hi"}],
            extra_headers={HEADER: "ticket-42"})
        assert first.headers[HEADER] == "ticket-42"
        # The client sends its whole history again; only the new user messages are added.
        second = bot.chat.completions.create(model="m", metadata={
            "conversation_id": "ticket-42"}, messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": first.parse().choices[0].message.content},
            {"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
        assert second.choices[0].message.content == "You said 'two'"
        body = stored(url, "ticket-42")
        # Another user's id is not there for them.
        with pytest.raises(openai.NotFoundError) as caught:
            client(url, BOB).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "mine?"}],
                extra_headers={HEADER: "ticket-42"})
        bad = bot.chat.completions.with_raw_response
        with pytest.raises(openai.BadRequestError) as wrong:
            bad.create(model="m", messages=[{"role": "user", "content": "x"}],
                       extra_headers={HEADER: "not/an id"})
    assert said(body)[1:] == [("user", "hi"), ("assistant", "You said 'hi'"),
                              ("user", "one"), ("assistant", "You said 'one'"),
                              ("user", "two"), ("assistant", "You said 'two'")]
    assert counted.calls == 3
    assert caught.value.status_code == 404
    assert caught.value.body["message"] == "no conversation 'ticket-42'"
    assert wrong.value.body["param"] == HEADER  # type: ignore[index]


def test_the_async_client_talks_to_the_bot() -> None:
    async def main(url: str) -> list[str | None]:
        bot = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=ANN, max_retries=0)
        answers = await asyncio.gather(*(bot.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"n{i}"}]) for i in range(5)))
        await bot.close()
        return [a.choices[0].message.content for a in answers]

    with served() as url:
        assert asyncio.run(main(url)) == [f"You said 'n{i}'" for i in range(5)]


def test_a_stream_sends_the_text_as_it_comes_and_usage_when_asked() -> None:
    with OpenAIServer(["Hello there, how can I help?", "Fine."]) as server:
        model = OpenAIModel("m", base_url=server.base_url, stream=True, max_retries=0)
        with served(TEMPLATE, model) as url:
            chunks = list(client(url).chat.completions.create(
                model="m", stream=True, stream_options={"include_usage": True},
                messages=[{"role": "user", "content": "hi"}]))
            plain = list(client(url).chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": "hi"}]))
        model.close()
    texts = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(t or "" for t in texts) == "Hello there, how can I help?"
    assert len([t for t in texts if t]) > 1  # streamed in pieces, as the model sent them
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    assert chunks[-1].usage.total_tokens == (chunks[-1].usage.prompt_tokens
                                             + chunks[-1].usage.completion_tokens)
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain) == "Fine."


def test_a_bot_waiting_for_approval_says_so_and_goes_on_in_the_native_api() -> None:
    with served() as url:
        raw = client(url).chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "refund A1"}])
        conversation = raw.headers[HEADER]
        answer = raw.parse()
        with pytest.raises(openai.ConflictError) as caught:
            client(url).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "and?"}],
                extra_headers={HEADER: conversation})
        waiting = stored(url, conversation)["waiting_for"]
        decided = httpx.post(f"{url}/api/conversations/{conversation}/approvals",
                             headers={"Authorization": f"Bearer {ANN}"},
                             json={"decisions": [{"call_id": waiting["calls"][0]["id"],
                                                  "approve": True}]})
        again = client(url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "thanks"}],
            extra_headers={HEADER: conversation})
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content == (
        'Waiting for you to approve or reject: refund({"order": "A1"}). In conversation '
        f"{conversation}: go on in the chat page or the JSON API "
        f"(/api/conversations/{conversation}).")
    assert caught.value.body["message"] == ("an approval is pending: answer it with POST "
                                    f"/api/conversations/{conversation}/approvals before a "
                                    "message")
    assert caught.value.response.headers[HEADER] == conversation
    assert decided.status_code == 200
    assert again.choices[0].message.content == "You said 'thanks'"


def test_an_ended_conversation_answers_409() -> None:
    with served(ONCE) as url:
        bot = client(url)
        first = bot.chat.completions.create(model="m", messages=[
            {"role": "user", "content": "hi"}], extra_headers={HEADER: "short"})
        with pytest.raises(openai.ConflictError) as caught:
            bot.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "more"}], extra_headers={HEADER: "short"})
    assert first.choices[0].message.content == "You said 'hi'"
    assert caught.value.body["message"] == "conversation 'short' has ended"


def test_a_failed_model_call_is_502_or_an_error_chunk_and_waits_for_retry() -> None:
    with served() as url:
        with pytest.raises(openai.InternalServerError) as caught:
            client(url).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "fail"}])
        conversation = caught.value.response.headers[HEADER]
        with pytest.raises(openai.APIError) as streamed:
            list(client(url).chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": "fail again"}]))
        waits = stored(url, conversation)["waiting_for"]
    assert caught.value.status_code == 502
    assert caught.value.body["message"] == "The assistant could not answer. Please try again."
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert streamed.value.message == "The assistant could not answer. Please try again."
    assert waits == {"type": "retry",
                     "error": "The assistant could not answer. Please try again."}


def test_an_idempotency_key_answers_a_repeat_as_the_first_and_runs_nothing() -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        def ask(content: str, key: str, token: str = ANN) -> Any:
            return client(url, token).chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": content}],
                extra_headers={"Idempotency-Key": key})

        first, repeat = ask("hi", "k1"), ask("hi", "k1")
        bobs = ask("hi", "k1", BOB)  # keys that start a conversation are per caller
        with pytest.raises(openai.ConflictError) as caught:
            ask("other", "k1")
    assert first.headers[HEADER] == repeat.headers[HEADER] != bobs.headers[HEADER]
    assert repeat.parse().choices[0].message.content == "You said 'hi'"
    assert counted.calls == 2
    assert caught.value.body["message"] == "this Idempotency-Key was used with other content"


@pytest.mark.parametrize(("body", "param", "message"), [
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools",
     "tools are not taken: the bot's tools are its own"),
    ({"n": 2}, "n", '"n" must be 1: the bot gives one reply, got 2'),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant",
                                                       "content": "yo"}]},
     "messages", "messages must end with a user message"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role",
     "messages[0].role must be one of system, developer, user, assistant, got 'tool'"),
])
def test_a_request_the_face_cannot_take_is_400_naming_the_field(
        body: dict[str, Any], param: str, message: str) -> None:
    with served() as url:
        answer = httpx.post(f"{url}/v1/chat/completions", headers={
            "Authorization": f"Bearer {ANN}"}, json={
            "model": "m", "messages": [{"role": "user", "content": "hi"}], **body})
    assert answer.status_code == 400
    assert answer.json() == {"error": {"message": message, "type": "invalid_request_error",
                                       "param": param, "code": None}}
