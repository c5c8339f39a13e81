"""A local server that is still starting is waited for; the real-model suite says why it
cannot run. No sleeping: the server starts when convo says it is waiting."""

from __future__ import annotations

import logging
import socket

import pytest

from convo import Message, ModelError, OpenAIModel
from convo.models._openai.local import ServerWait, is_local
from convo.testing import OpenAIServer

# -- a local server that is still starting --------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _StartOnWait(logging.Handler):
    """Starts the server when convo says it is waiting for it: no sleeping in the test."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port
        self.notes: list[str] = []
        self.server: OpenAIServer | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.notes.append(record.getMessage())
        if self.server is None:
            self.server = OpenAIServer(["Hello!"], port=self.port)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_local_server_that_is_starting_is_waited_for(api: str) -> None:
    port = _free_port()
    handler = _StartOnWait(port)
    logger = logging.getLogger("convo")
    logger.addHandler(handler)
    try:
        with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0,
                         api=api) as model:
            reply = model.complete([Message("user", "hi")])
    finally:
        logger.removeHandler(handler)
        if handler.server is not None:
            handler.server.close()
    assert reply.content == "Hello!"
    assert handler.notes == [f"waiting for the server at http://127.0.0.1:{port}/v1 "
                             "(model 'm') to start (up to 30 s)"]


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True),
    ("http://[::1]:8000/v1", True), ("http://0.0.0.0:8000/v1", True),
    ("https://api.openai.com/v1", False), ("http://10.0.0.5:8000/v1", False),
    ("", False), (None, False),
])
def test_is_local(url: str | None, local: bool) -> None:
    assert is_local(url) is local
    assert ServerWait(url, "x").limit == (30.0 if local else 0.0)


def test_a_refused_remote_server_is_not_waited_for() -> None:
    exc = ConnectionError("x")
    exc.__cause__ = ConnectionRefusedError("refused")
    assert ServerWait("https://api.example.com/v1", "x").retry_after(exc) is None


def test_a_server_that_never_starts_fails_after_the_wait() -> None:
    port = _free_port()
    with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0,
                     start_wait=0.3) as model, pytest.raises(ModelError) as info:
        model.complete([Message("user", "hi")])
    assert f"could not connect to http://127.0.0.1:{port}/v1" in str(info.value)


def test_the_real_model_suite_says_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from convo.testing import _llama as llama

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    assert llama.llama_cpp_missing() == (
        'llama_cpp cannot be imported: pip install "llama-cpp-python[server]" (builds '
        "llama.cpp from source, a few minutes)")
    with pytest.raises(llama.LlamaUnavailable, match="llama_cpp cannot be imported"):
        llama.LlamaServer()
