"""The real-model suite: one llama-cpp-python server with SmolLM2-135M for the session.

Skipped, with the reason said at the end of the run, only when llama-cpp-python cannot be
imported here, or when its build dies on a one-token completion on this machine (a build for
this very CPU did: .ci/run builds it for any x86-64); any other failure to start the server
fails the tests that need it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from convo.testing._llama import LlamaServer, llama_cpp_crashes, llama_cpp_missing

N_CTX = 1024


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    missing = llama_cpp_missing() or _crash()
    if missing is not None:
        pytest.skip(f"no real model: {missing}")
    with LlamaServer(n_ctx=N_CTX) as server:
        yield server


_CRASH: list[str | None] = []


def _crash() -> str | None:
    """Whether the build crashes, asked once a session."""
    if not _CRASH:
        _CRASH.append(llama_cpp_crashes())
    return _CRASH[0]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it out loud when the real-model suite could not run (never a silent skip)."""
    missing = llama_cpp_missing() or (_CRASH[0] if _CRASH else None)
    if missing is not None:
        terminalreporter.write_line(f"tests/real skipped: {missing}", yellow=True, bold=True)
