"""The command line with a local OpenAI-compatible server: the tool formats, the model
options, the note about ignored tools, ``convo models``. The server is an OpenAIServer on
127.0.0.1; the command runs in a subprocess."""

from __future__ import annotations

import pytest
from cli_kit import WEATHER, convo

from convo._terminal.notices import IGNORED_TOOLS_NOTE
from convo.testing import ErrorReply, OpenAIServer


def test_text_tool_format_and_model_options(env: dict[str, str]) -> None:
    with OpenAIServer(['<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}'
                       "</tool_call>", "Sunny in Oslo.", "Rainy in Rome."]) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo", "--no-stream",
                     "--tool-format", "text", "--max-tokens", "50", "--temperature", "0.2",
                     "--timeout", "9", env=env)
        first = server.requests[0]
    assert done.returncode == 0, done.stderr
    assert "→ weather({\"city\": \"Oslo\"})" in done.stdout
    assert "Assistant: Sunny in Oslo." in done.stdout
    assert "tools" not in first and "tool_choice" not in first
    assert "<tool_call>" in first["messages"][0]["content"]
    assert (first["max_tokens"], first["temperature"]) == (50, 0.2)
    assert IGNORED_TOOLS_NOTE not in done.stdout


@pytest.mark.parametrize(("flag", "sent"), [
    ("auto", "auto"), ("required", "required"), ("none", "none"), ("unset", None),
    ("weather", {"type": "function", "function": {"name": "weather"}}),
])
def test_tool_choice(env: dict[str, str], flag: str, sent: object) -> None:
    with OpenAIServer(["Hi.", "Hi."]) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo",
                     "--tool-choice", flag, env=env)
        assert done.returncode == 0, done.stderr
        assert server.requests[0].get("tool_choice") == sent


def test_tools_ignored_by_the_server_are_noted_once(env: dict[str, str]) -> None:
    with OpenAIServer(["It is sunny, I think.", "Rome too."]) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(f"--- {IGNORED_TOOLS_NOTE} ---") == 1
    assert done.stdout.index("It is sunny") < done.stdout.index(IGNORED_TOOLS_NOTE)


def test_a_server_without_tools_suggests_the_text_format(env: dict[str, str]) -> None:
    body = {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}}
    with OpenAIServer([ErrorReply(400, body=body)]) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo", env=env)
    assert done.returncode == 1
    assert "does not support tools. The server or the model takes no native tools: use " \
           'tool_format="text" (convo run --tool-format text)' in done.stdout + done.stderr


def test_models_lists_what_the_server_offers(env: dict[str, str]) -> None:
    with OpenAIServer() as server:
        done = convo("models", "--base-url", server.base_url, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "convo-test\n", "")


def test_models_without_a_server_says_which_to_ask(env: dict[str, str]) -> None:
    done = convo("models", env=env)
    assert (done.returncode, done.stderr) == (
        2, "convo: error: no OPENAI_API_KEY and no --base-url: say which server to ask\n")


def test_models_on_a_dead_server_is_one_line(env: dict[str, str]) -> None:
    done = convo("models", "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("convo: error: no HTTP status: could not connect to "
                                  "http://127.0.0.1:9/v1 (listing models)")


def test_no_note_once_the_server_has_called_a_tool(env: dict[str, str]) -> None:
    with OpenAIServer(["{weather(city='Oslo')}", "Sunny in Oslo.", "Hello!"]) as server:
        done = convo("run", WEATHER, "--base-url", server.base_url, "--demo", env=env)
    assert done.returncode == 0, done.stderr
    assert "Assistant: Hello!" in done.stdout
    assert IGNORED_TOOLS_NOTE not in done.stdout  # it calls tools: a turn without one is fine


def test_the_note_is_meant_for_servers_other_than_openais(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from convo import MockModel, OpenAIModel
    from convo._terminal.notices import may_ignore_tools

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert not may_ignore_tools(OpenAIModel(api_key="k"))  # a "hello" with MCP tools loaded
    assert not may_ignore_tools(OpenAIModel(api_key="k", base_url="https://api.openai.com/v1"))
    assert may_ignore_tools(OpenAIModel(base_url="http://127.0.0.1:8080/v1"))
    assert not may_ignore_tools(OpenAIModel(base_url="http://127.0.0.1:8080/v1",
                                            tool_format="text"))
    assert not may_ignore_tools(MockModel([]))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert may_ignore_tools(OpenAIModel(api_key="k"))
