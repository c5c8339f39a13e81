"""Models by name (convo.models.resolve / register) and --model PREFIX:NAME on the command
line: the built-in prefixes, a name that only looks prefixed, and the clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from convo import AnthropicModel, EchoModel, GeminiModel, OpenAIModel
from convo.models import register, resolve
from convo.models._providers import BUILT_IN, BuiltIn, _registered
from convo.testing import AnthropicServer, GeminiServer, OpenAIServer

FIXTURES = Path(__file__).resolve().parents[1] / "cli_fixtures"


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    yield
    _registered.pop("echoes", None)


def test_resolve_builds_openai_models_by_prefix_and_keeps_unknown_prefixes_in_the_name() -> None:
    chat = resolve("openai:gpt-4o", api_key="k")
    responses = resolve("openai-responses:o4-mini", api_key="k")
    ollama = resolve("llama3:8b", api_key="k", base_url="http://127.0.0.1:9/v1")
    default = resolve("", api_key="k")
    assert all(isinstance(m, OpenAIModel) for m in (chat, responses, ollama, default))
    assert (chat.model, chat.api) == ("gpt-4o", "chat")
    assert (responses.model, responses.api) == ("o4-mini", "responses")
    assert (ollama.model, ollama.api) == ("llama3:8b", "chat")
    assert default.model == "gpt-4o-mini"


def test_a_registered_prefix_makes_its_model() -> None:
    register("echoes", lambda name: EchoModel())
    assert isinstance(resolve("echoes:anything"), EchoModel)
    register("echoes", lambda name: OpenAIModel(name, api_key="k"))  # again: replaced
    assert resolve("echoes:gpt-x").model == "gpt-x"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("prefix", "factory", "error", "says"), [
    ("Bad Prefix", EchoModel, ValueError, "a provider's prefix is lower-case letters"),
    ("openai", EchoModel, ValueError, "'openai' is convo's own provider prefix"),
    ("echoes", "not callable", TypeError, "the factory must be callable (name) -> Model"),
])
def test_register_refuses_what_cannot_work(prefix: str, factory: object,
                                           error: type[Exception], says: str) -> None:
    with pytest.raises(error) as caught:
        register(prefix, factory)  # type: ignore[arg-type]
    assert says in str(caught.value)


def test_a_factory_that_makes_no_model_and_options_for_a_factory_are_refused() -> None:
    register("echoes", lambda name: "a string")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="the factory registered for 'echoes' returned a str, "
                                        r"not a model \(complete/acomplete\)"):
        resolve("echoes:x")
    register("echoes", lambda name: EchoModel())
    with pytest.raises(TypeError, match="its factory takes the model's name only, not stream"):
        resolve("echoes:x", stream=True)


def test_a_provider_not_in_this_version_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = BuiltIn("convo.models.nowhere", "NowhereModel", "nowhere", ("NOWHERE_KEY",))
    monkeypatch.setitem(BUILT_IN, "gemini", missing)  # type: ignore[index]
    with pytest.raises(ImportError, match="the gemini: provider is not in this version of "
                                          "convo yet"):
        resolve("gemini:some-model")


def _convo(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                         "ANTHROPIC_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY")}
    return subprocess.run([sys.executable, "-m", "convo", *args], env=base | env, cwd=cwd,
                          capture_output=True, text=True, timeout=30, check=False)


def test_cli_anthropic_without_a_key_runs_on_the_mock_and_with_one_on_the_messages_api(
        tmp_path: Path) -> None:
    bot = str(FIXTURES / "chat.py")
    offline = _convo("test", bot, "--model", "anthropic:claude-x", "--turns", "1",
                     env={}, cwd=tmp_path)
    assert "no ANTHROPIC_API_KEY or --base-url: running offline on" in offline.stderr
    with AnthropicServer(["Hi from Claude."]) as server:
        done = _convo("run", bot, "--model", "anthropic:claude-x", "--demo", "--no-log",
                      env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.base_url},
                      cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "model claude-x from the anthropic: provider" in done.stderr
        assert server.paths == ["/v1/messages"]
        assert server.requests[0]["model"] == "claude-x"


@pytest.mark.parametrize(("name", "kind"), [("anthropic:claude-x", AnthropicModel),
                                              ("gemini:gemini-x", GeminiModel)],
                         ids=["anthropic", "gemini"])
def test_resolve_makes_a_provider_model(name: str, kind: type) -> None:
    model = resolve(name, base_url="http://127.0.0.1:9", stream=True)
    assert isinstance(model, kind)
    assert (model.model, model.base_url, model.stream) == (name.split(":")[1],
                                                           "http://127.0.0.1:9", True)


@pytest.mark.parametrize(("provider", "module", "unset", "key"), [
    ("anthropic", "anthropic", ("ANTHROPIC_",), "ANTHROPIC_API_KEY"),
    ("gemini", "google.genai", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_API_KEY"),
], ids=["anthropic", "gemini"])
def test_cli_without_the_sdk_says_what_to_install(tmp_path: Path, provider: str, module: str,
                                                  unset: tuple[str, ...], key: str) -> None:
    name = {"anthropic": "anthropic:claude-x", "gemini": "gemini:gemini-x"}[provider]
    code = (f"import sys; sys.modules[{module!r}] = None; from convo.cli import main; "
            f"sys.exit(main(['run', {str(FIXTURES / 'chat.py')!r}, "
            f"'--model', {name!r}, '--demo', '--no-log']))")
    base = {k: v for k, v in os.environ.items() if not k.startswith(unset)}
    done = subprocess.run([sys.executable, "-c", code], env=base | {key: "k"},
                          cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f'convo: error: --model {name}: the {provider}: provider needs the '
        f'{module} package, in the {provider} extra: pip install -e ".[{provider}]" in '
        f'convo\'s checkout, or pip install "convo[{provider}]" from an index that serves this '
        'convo (the "convo" on the public package index is another project)']


def test_cli_gemini_without_a_key_runs_on_the_mock_and_with_one_on_the_gemini_api(
        tmp_path: Path) -> None:
    bot = str(FIXTURES / "chat.py")
    offline = _convo("test", bot, "--model", "gemini:gemini-x", "--turns", "1",
                     env={}, cwd=tmp_path)
    assert "no GEMINI_API_KEY or GOOGLE_API_KEY or --base-url: running offline on" \
        in offline.stderr
    with GeminiServer(["Hi from Gemini."]) as server:
        done = _convo("run", bot, "--model", "gemini:gemini-x", "--demo", "--no-log",
                      "--base-url", server.base_url, env={"GOOGLE_API_KEY": "k"}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "model gemini-x from the gemini: provider" in done.stderr
        assert "Hi from Gemini." in done.stdout
        assert server.paths == ["/v1/models/gemini-x:streamGenerateContent"]
        assert server.keys == ["k"]


def test_cli_openai_responses_prefix_uses_the_responses_api(tmp_path: Path) -> None:
    with OpenAIServer(["Hi from Responses."]) as server:
        done = _convo("run", str(FIXTURES / "chat.py"), "--model", "openai-responses:o4-mini",
                      "--base-url", server.base_url, "--demo", "--no-log", env={},
                      cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "model o4-mini at " in done.stderr and "(Responses API)" in done.stderr
        assert server.paths[0] == "/v1/responses"
        assert server.requests[0]["model"] == "o4-mini"
