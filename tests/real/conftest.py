"""The real-model suite: one llama-cpp-python server with SmolLM2-135M for the session.

Skipped, with the reason, only when llama-cpp-python cannot be imported here; any other
failure to start the server fails the tests that need it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from convo.testing.llama import LlamaServer, llama_cpp_missing

N_CTX = 1024


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    missing = llama_cpp_missing()
    if missing is not None:
        pytest.skip(f"no real model: {missing}")
    with LlamaServer(n_ctx=N_CTX) as server:
        yield server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it out loud when the real-model suite could not run (never a silent skip)."""
    missing = llama_cpp_missing()
    if missing is not None:
        terminalreporter.write_line(f"tests/real skipped: {missing}", yellow=True, bold=True)
