"""The OpenAI face's stateless replay (§25) on the Temporal engine, through the real `openai`
SDK: a Chat Completions request carrying a whole history and no conversation id starts a
workflow with that history; a `convo worker` process replays it (no model call for what it
holds), stores it and answers the trailing user message (also streamed); a history the bot
cannot have produced is 400 naming its index, with nothing stored."""

from __future__ import annotations

import openai
import pytest
from temporal_kit import GatedTest

HEADER = "X-Convo-Conversation"


def test_a_stateless_history_is_replayed_and_answered_on_temporal(gated: GatedTest) -> None:
    gated.gate.touch()
    with openai.OpenAI(base_url=f"http://127.0.0.1:{gated.port}/v1", api_key="none",
                       max_retries=0) as bot:
        raw = bot.chat.completions.with_raw_response.create(model="m", messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello from before"},
            {"role": "user", "content": "again"}])
        answer = raw.parse()
        conversation = raw.headers[HEADER]
        stream = bot.chat.completions.create(model="m", stream=True, messages=[
            {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"}])
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        with pytest.raises(openai.BadRequestError) as caught:
            bot.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "one"},
                {"role": "assistant", "content": "two"}, {"role": "user", "content": "x"}])
    stored = gated.client.get(f"/api/conversations/{conversation}").json()
    made = gated.new_conversations()
    assert answer.choices[0].message.content == "You said 'again'"
    assert [(m["role"], m["content"]) for m in stored["messages"]] == [
        ("system", "Gated."), ("user", "hi"), ("assistant", "Hello from before"),
        ("user", "again"), ("assistant", "You said 'again'")]
    assert all(m["id"] for m in stored["messages"])
    assert stored["waiting_for"] == {"type": "user", "prompt": None}
    assert streamed == "You said 'three'"
    assert caught.value.body == {  # type: ignore[comparison-overlap]
        "message": "messages[2] is not what the bot waits for there: it waits for a user "
                   "message; the conversation cannot have gone this way",
        "type": "invalid_request_error", "param": "messages", "code": None}
    assert len(made) == 2 and conversation in made  # (the refused history kept nothing)
    assert gated.calls() == ["model again", "model three"]
