"""OpenAIServer's per-request handler, keep_requests, and the fixture's check for unused
replies."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from testing_kit import fails_saying

from convo import Message
from convo.testing import ErrorReply, OpenAIServer


def ask(server: OpenAIServer, text: str = "hi") -> Any:
    with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as client:
        return client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": text}])


def test_the_handler_answers_from_the_request() -> None:
    def echo(body: dict[str, Any]) -> str:
        return f"You said {body['messages'][-1]['content']}. {{note(n=1)}}"

    with OpenAIServer(handler=echo) as server:
        reply = ask(server, "cheese").choices[0].message
        assert reply.content == "You said cheese."
        assert reply.tool_calls is not None and reply.tool_calls[0].function.name == "note"
        assert server.received == 1 and len(server.requests) == 1


def test_none_from_the_handler_leaves_the_request_to_the_script() -> None:
    def only_errors(body: dict[str, Any]) -> Any:
        return ErrorReply(400) if body["messages"][-1]["content"] == "bad" else None

    with OpenAIServer(["scripted"], handler=only_errors) as server:
        with pytest.raises(openai.BadRequestError):
            ask(server, "bad")
        assert ask(server).choices[0].message.content == "scripted"
        assert server.remaining == 0


def test_a_failing_handler_is_a_500_that_names_it() -> None:
    def broken(body: dict[str, Any]) -> Any:
        raise KeyError("model")

    with OpenAIServer(handler=broken) as server:
        with pytest.raises(openai.InternalServerError) as failed:
            ask(server)
    assert failed.value.body == {"message": "OpenAIServer handler raised KeyError: 'model' "
                                            "(request 1)", "type": "server_error",
                                 "code": "handler_error"}


def test_a_handler_reply_that_is_not_a_reply_is_a_500() -> None:
    with OpenAIServer(handler=lambda body: 42) as server:  # type: ignore[arg-type,return-value]
        with pytest.raises(openai.InternalServerError, match="OpenAIServer handler, request 1: "
                           "a reply must be a str or a Message, got int"):
            ask(server)


def test_keep_requests_false_counts_but_keeps_nothing() -> None:
    with OpenAIServer(handler=lambda body: Message("assistant", "ok"),
                      keep_requests=False) as server:
        ask(server)
        ask(server)
        assert server.requests == [] and server.received == 2


def test_replies_are_shown_as_given() -> None:
    with OpenAIServer(["a {f(x=1)}", ErrorReply(429)]) as server:
        assert server.replies == ("a {f(x=1)}", ErrorReply(429))
        assert server.served == 0 and server.remaining == 2


FIXTURE_TEST = """
import openai

def test_server(openai_server):
    openai_server.add("used", "never used")
    CHECK
    with openai.OpenAI(base_url=openai_server.base_url, api_key="t") as client:
        client.chat.completions.create(model="m", messages=[])
"""


def test_the_fixture_fails_a_test_that_leaves_replies_unused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TEST.replace("CHECK", ""))
    fails_saying(pytester, [
        "*the conversation ended before its script did (pass check_complete=False to the "
        "factory, or set openai_server.check_complete = False, to allow this):",
        "*openai_server #1: 1 of 2 scripted replies were not used (the server received "
        "1 requests)",
        "*used   reply 1: 'used'",
        "*UNUSED reply 2: 'never used'",
    ])


def test_check_complete_false_allows_leftovers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TEST.replace("CHECK", "openai_server.check_complete = False"))
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_failing_test_shows_what_the_server_answered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import openai

def test_server(openai_server):
    openai_server.add("Hello!")
    with openai.OpenAI(base_url=openai_server.base_url, api_key="t") as client:
        client.chat.completions.create(model="m", messages=[])
    assert False, "the test itself failed"
""")
    fails_saying(pytester, [
        "*Captured convo scripts call*",
        "openai_server #1: 1 replies scripted, 1 requests received",
        "  used   reply 1: 'Hello!'",
    ])
