"""The terminal's Ctrl-C answerer (``convo._terminal.cancel``) under ``arun()``: a batch whose
every call a limit stopped runs nothing, and the run ends as under ``run()``."""

from __future__ import annotations

import asyncio
import io

from convo import Limits, LinearTemplate, MockModel, ToolingTemplate, UserTemplate, tool
from convo._session import RunStatus
from convo._terminal.printer import ConsolePrinter
from convo._terminal.runner import CommandLineRunner


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _runner() -> CommandLineRunner:
    return CommandLineRunner(MockModel(["{add(a=1, b=2)}", "done"]),
                             LinearTemplate([UserTemplate("go"), ToolingTemplate([add])]),
                             printer=ConsolePrinter(io.StringIO()), limits=Limits(tool_calls=0))


def test_a_batch_the_limits_stopped_ends_the_run_as_under_run() -> None:
    ran = _runner().run()
    awaited = asyncio.run(_runner().arun())
    for session in (ran, awaited):
        assert session.outcome is not None
        assert (session.outcome.status, session.outcome.error) == (RunStatus.USAGE_LIMIT, None)
        assert [m.content for m in session.messages] == [
            "go", "", "Not run: the tool_calls limit was reached"]
