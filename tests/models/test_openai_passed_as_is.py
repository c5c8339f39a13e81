"""OpenAIModel passes the conversation to the SDK's own ``chat.completions.create`` in
``extra_body`` (the SDK does not walk it against its TypedDicts: the body is the same), and
as plain arguments to a ``create`` that is not the SDK's own (an instrumentation wrapper)."""

from __future__ import annotations

import functools
from typing import Any

import openai
from openai.resources.chat.completions import AsyncCompletions

from convo import LinearTemplate, OpenAIModel, Runner, ToolingTemplate, UserTemplate, tool
from convo.models._openai.request import passed_as_is
from convo.testing import OpenAIServer


@tool
def look(q: str) -> str:
    """Look it up.

    Args:
        q: What to look up.
    """
    return f"found {q}"


def _tea_asked_about(**options: Any) -> list[dict[str, Any]]:
    """A model with ``options`` asked "What is tea?" on the fake server, looking it up: the two
    request bodies the server got (the answer asserted)."""
    with OpenAIServer(["{look(q='tea')}", "Tea is a drink."]) as server:
        model = OpenAIModel("test-model", base_url=server.base_url, api_key="test", **options)
        template = LinearTemplate([UserTemplate("What is tea?"), ToolingTemplate([look])])
        session = Runner(model, template).run()
        model.close()
    assert session.messages[-1].content == "Tea is a drink."
    return list(server.requests)


def test_the_server_gets_the_same_body_and_the_users_extra_body() -> None:
    first, second = _tea_asked_about(extra_body={"metadata_tag": "x"})
    assert first["messages"] == [{"role": "user", "content": "What is tea?"}]
    assert [t["function"]["name"] for t in first["tools"]] == ["look"]
    assert first["metadata_tag"] == "x"
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert second["messages"][2]["content"] == "found tea"


def test_the_sdks_own_create_gets_the_conversation_in_extra_body() -> None:
    completions = openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9").chat.completions
    messages = [{"role": "user", "content": "hi"}]
    kwargs = passed_as_is({"model": "m", "messages": messages, "tools": [{"type": "function"}],
                           "extra_body": {"tools": "the user's"}}, completions)
    assert kwargs == {"model": "m", "messages": (),
                      "extra_body": {"messages": messages, "tools": "the user's"}}


class _Wrapper:
    """What an instrumentation library puts in place of ``create`` (not a plain function)."""

    def __init__(self, wrapped: Any) -> None:
        self.__wrapped__ = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance: Any, owner: Any) -> Any:
        return functools.partial(self.__wrapped__, instance)


class _Instrumented(AsyncCompletions):
    create = _Wrapper(AsyncCompletions.create)  # type: ignore[assignment]


def test_a_wrapped_create_sees_the_arguments_as_they_are() -> None:
    client = openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9")
    completions = _Instrumented(client)
    kwargs: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert passed_as_is(dict(kwargs), completions) == kwargs
    assert passed_as_is(dict(kwargs), object()) == kwargs  # a client of another kind


def test_the_responses_api_gets_its_input_in_extra_body_and_the_same_body() -> None:
    responses = openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9").responses
    items = [{"role": "user", "content": "hi"}]
    assert passed_as_is({"model": "m", "input": items, "store": False}, responses) == {
        "model": "m", "store": False, "extra_body": {"input": items}}
    first, second = _tea_asked_about(api="responses")
    assert first["input"] == [{"role": "user", "content": "What is tea?"}]
    assert [t["name"] for t in first["tools"]] == ["look"]
    assert [item.get("type", item.get("role")) for item in second["input"]] == [
        "user", "function_call", "function_call_output"]
