"""A tool that requires MCP tasks (``execution.taskSupport: "required"``, as server-everything's
``simulate-research-query``): convo's client cannot call it, so it is left out of the server's
tools with a warning naming it; a tool where tasks are optional is called as any other."""

from __future__ import annotations

import logging

import pytest
from mcp_kit import stdio_server

from convo import LinearTemplate, MockModel, Runner, ToolingTemplate, UserTemplate


def test_a_tool_that_requires_tasks_is_left_out_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with stdio_server("tasks", name="tasks", timeout=20) as server, \
            caplog.at_level(logging.WARNING, logger="convo"):
        assert [t.name for t in server.tools()] == ["quick", "plain"]
        template = LinearTemplate([UserTemplate("go"), ToolingTemplate([server])])
        model = MockModel(["{quick()}{plain()}", "Done."])
        session = Runner(model, template).run()
    assert [m.text for m in session.messages if m.role == "tool"] == ["ran quick", "ran plain"]
    assert [t["function"]["name"] for t in model.calls[0].tools] == ["quick", "plain"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "MCP server 'tasks': tool 'research' requires task-augmented execution "
        '(execution.taskSupport "required"), which convo does not support: left out of the '
        "server's tools"]
