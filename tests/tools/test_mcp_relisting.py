"""A server whose tool list changes mid-conversation to include a name the turn already has
(``finish``): the conversation goes on without that tool (a warning names the server and the
tool), in-process and served, on any store; a clash at the first listing stays an error."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp_kit import stdio_server
from starlette.testclient import TestClient

from convo import MCPServer, Message, Runner, ScriptedInterface
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool

WARNING = (
    "ToolingTemplate: two tools of the turn are named 'finish': <FinishTool 'finish'> "
    "(tools[1]) and <MCPTool 'finish' of MCP server '{name}'> (listed by '{name}', tools[0]); "
    "'finish' was listed after the server's first listing and is left out of the turn (not "
    "offered to the model): give the server a prefix to use it")


class Model:
    """Calls ``add_finish`` on the first message, then answers; keeps the tools offered."""

    def __init__(self) -> None:
        self.offered: list[list[tuple[str, str]]] = []

    def reply(self, messages: Sequence[Message], tools: Any) -> str:
        self.offered.append([(t["function"]["name"], t["function"]["description"])
                             for t in tools])
        last = messages[-1]
        if last.role == "tool":
            return f"The server says {last.content}."
        return "{add_finish()}" if last.content == "grow" else f"Still here: {last.content}."


def _template(server: MCPServer) -> LoopTemplate:
    return LoopTemplate([UserTemplate(), ToolingTemplate([server, FinishTool()])])


def _offered_after_the_change(model: Model) -> list[str]:
    names = [name for name, _ in model.offered[-1]]
    assert [d for n, d in model.offered[-1] if n == "finish"] == [FinishTool().description]
    return names


def test_a_clash_after_a_relisting_leaves_the_tool_out(caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    model = Model()
    with stdio_server("grows_finish", name="grower-run", timeout=20) as server:
        runner = Runner(FunctionModel(model.reply), _template(server),
                        ScriptedInterface(["grow", "hello"]))
        with caplog.at_level(logging.WARNING, logger="convo"):
            session = runner.run()
    assert session.outcome is not None and session.outcome.status == "stopped"
    assert [m.text for m in session.messages if m.role == "assistant"][-1] == \
        "Still here: hello."
    assert _offered_after_the_change(model) == ["add_finish", "finish"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == \
        [WARNING.format(name="grower-run")]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_served_conversation_outlives_a_clash_after_a_relisting(
        store: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = Model()
    url = "memory" if store == "memory" else f"sqlite:///{tmp_path / 'convo.db'}"
    name = f"grower-{store}"
    with stdio_server("grows_finish", name=name, timeout=20) as server, \
            caplog.at_level(logging.WARNING, logger="convo"), \
            TestClient(create_app(_template(server), FunctionModel(model.reply),
                                  store=url)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        said = []
        for text in ("grow", "hello", "again"):
            answer = client.post(f"/api/conversations/{cid}/messages", json={"content": text})
            assert answer.status_code == 200, answer.text
            said.append(answer.json()["added"][-1]["content"])
        status = client.get(f"/api/conversations/{cid}").json()["status"]
    assert said == ["The server says added.", "Still here: hello.", "Still here: again."]
    assert status == "waiting"
    assert _offered_after_the_change(model) == ["add_finish", "finish"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == \
        [WARNING.format(name=name)]
