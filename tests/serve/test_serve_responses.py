"""Serving on the Responses API: a conversation rebuilt on another worker from the store sends
the reasoning items of its earlier replies back, in place (API.md §15), without the server
storing anything."""

from __future__ import annotations

from pathlib import Path

from serve_kit import said_on_two_workers

from convo import Message, OpenAIModel
from convo.templates import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate
from convo.testing import OpenAIServer

THOUGHT = {"id": "rs_1", "type": "reasoning", "encrypted_content": "opaque-1",
           "summary": [{"type": "summary_text", "text": "A greeting."}]}
TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), AssistantTemplate()])])


def test_a_rebuilt_conversation_sends_its_reasoning_back(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with OpenAIServer([Message("assistant", "Hi!", metadata={"reasoning": [THOUGHT]}),
                       "Still here."]) as server, OpenAIModel(
            "o4-mini", base_url=server.base_url, api="responses", stream=True,
            reasoning={"effort": "low"}, max_retries=0) as model:
        said_on_two_workers(TEMPLATE, model, store, "hello", "more")
        assert server.requests[1]["input"] == [
            {"role": "user", "content": "hello"},
            THOUGHT,
            {"role": "assistant", "content": "Hi!"},
            {"role": "user", "content": "more"},
        ]
        assert [r["store"] for r in server.requests] == [False, False]
        assert server.paths == ["/v1/responses", "/v1/responses"]


def test_convo_serve_takes_the_api_and_the_reasoning_effort() -> None:
    import argparse

    from convo._botfile import choose_model, load_file
    from convo.cli import _parser
    from convo.cli._serve import _spec

    bot = str(Path(__file__).parents[1] / "cli_fixtures" / "weather.py")
    args = _parser().parse_args(["serve", bot, "--base-url", "http://127.0.0.1:9/v1",
                                 "--api", "responses", "--reasoning", "high"])
    spec = _spec(args)
    assert (spec["api"], spec["reasoning"]) == ("responses", "high")
    model, said = choose_model(argparse.Namespace(**spec), load_file(bot), bot)
    assert (model.api, model.reasoning) == ("responses", {"effort": "high", "summary": "auto"})
    assert said == "model gpt-4o-mini at http://127.0.0.1:9/v1 (Responses API)"
