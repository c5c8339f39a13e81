"""``--api responses``, ``--reasoning`` and ``--hide-reasoning`` on the command line, against
an OpenAIServer on 127.0.0.1 (the command runs in a subprocess)."""

from __future__ import annotations

import pytest
from cli_kit import WEATHER, convo

from convo import Message, ToolCall
from convo.testing import OpenAIServer

THOUGHT = {"id": "rs_1", "type": "reasoning", "encrypted_content": "opaque",
           "summary": [{"type": "summary_text", "text": "The user asks about Oslo."}]}


def replies() -> list[Message]:
    return [Message("assistant", "", tool_calls=[ToolCall("call_1", "weather", {"city": "Oslo"})],
                    metadata={"reasoning": [THOUGHT]}),
            Message("assistant", "Sunny in Oslo."), Message("assistant", "Rainy in Rome.")]


@pytest.mark.parametrize("hide", [False, True])
def test_run_on_the_responses_api_shows_the_reasoning(env: dict[str, str], hide: bool) -> None:
    with OpenAIServer(replies()) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo", "--api",
                     "responses", "--reasoning", "low", *(["--hide-reasoning"] * hide),
                     env=env)
        paths, first, second = server.paths, server.requests[0], server.requests[1]
    assert done.returncode == 0, done.stderr
    assert paths == ["/v1/responses"] * 3
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["stream"] is True
    assert second["input"][1] == THOUGHT  # sent back in place, before the call
    assert "Assistant: Sunny in Oslo." in done.stdout
    shown = "Thinking: The user asks about Oslo.\n"
    assert (shown in done.stdout) is not hide


def test_reasoning_without_the_responses_api_is_a_usage_error(env: dict[str, str]) -> None:
    done = convo("run", WEATHER, "--base-url", "http://127.0.0.1:9/v1", "--demo",
                 "--reasoning", "low", env=env)
    assert done.returncode == 2
    assert ("--reasoning low: reasoning settings are sent on the Responses API only: add "
            "--api responses") in done.stderr


def test_an_unknown_api_is_refused_by_the_parser(env: dict[str, str]) -> None:
    done = convo("run", WEATHER, "--api", "completions", env=env)
    assert done.returncode == 2
    assert "argument --api: invalid choice: 'completions' (choose from" in done.stderr
