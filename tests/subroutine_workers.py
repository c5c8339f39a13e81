"""A bot that starts inside a subroutine, and the walk of one conversation across workers
that checks nothing a store holds runs again: shared by the serving tests and the e2e test of
two workers on Postgres."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from message_json import unnumbered
from starlette.testclient import TestClient

from convo import Message, ModelError
from convo.models import FunctionModel
from convo.serve._stores import Store, Stored
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool


def subroutine_bot(folder: Path) -> tuple[LinearTemplate, FunctionModel]:
    """A bot that starts inside a subroutine (a task on its own session, asking the user twice)
    and then chats; its model and its tool append a line to a file each time they run."""

    @tool
    def jot(text: str) -> str:
        """Jot a note down."""
        with open(folder / "jotted.txt", "a", encoding="utf-8") as file:
            file.write(text + "\n")
        return f"jotted {text}"

    def answer(messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        with open(folder / "model_calls.txt", "a", encoding="utf-8") as file:
            file.write(f"{len(messages)} {last.content}\n")
        if last.role == "tool":
            return f"Done: {last.content}"
        if last.content == "flaky" and not (folder / "failed").exists():
            (folder / "failed").touch()
            raise ModelError("HTTP 500 from the test model")
        if last.content.startswith("jot "):
            return f"{{jot(text='{last.content[4:]}')}}"
        return f"You said {last.content!r}"

    task = SubroutineTemplate(
        LinearTemplate([UserTemplate(), ToolingTemplate([jot]),
                        UserTemplate(description="Confirm?"), ToolingTemplate([jot])]),
        inherit="system", keep="last", template_id="task")
    template = LinearTemplate([SystemTemplate("Be brief."), task,
                               LoopTemplate([UserTemplate(), ToolingTemplate([jot])])])
    return template, FunctionModel(answer)


def jotted_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def check_subroutines_on_two_workers(clients: Sequence[TestClient], folder: Path,
                                     store: Store | None = None) -> None:
    """A conversation started on ``clients[0]``, its turns sent to the others in order: inside
    the subroutine, at its end, after it. Nothing the store holds is run again."""
    calls, jotted = folder / "model_calls.txt", folder / "jotted.txt"
    cid = clients[0].post("/api/conversations", json={}).json()["id"]
    url = f"/api/conversations/{cid}/messages"
    first = clients[1].post(url, json={"content": "jot A"})  # inside the child, then it asks again
    assert first.status_code == 200, first.text
    assert (first.json()["added"], first.json()["waiting_for"]) == (
        [], {"type": "user", "prompt": "Confirm?"})
    assert (jotted_lines(calls), jotted_lines(jotted)) == (["2 jot A", "4 jotted A"], ["A"])
    # The child's record is stored as it stands: the other worker goes on inside the child.
    second = clients[2].post(url, json={"content": "jot B"})
    assert second.status_code == 200, second.text
    assert unnumbered(second.json()["added"]) == (
        [{"role": "assistant", "content": "Done: jotted B"}])
    assert jotted_lines(calls) == ["2 jot A", "4 jotted A", "6 jot B", "8 jotted B"]
    assert jotted_lines(jotted) == ["A", "B"]
    # Past the subroutine: its record is replayed, neither its model nor its tool runs again.
    third = clients[3].post(url, json={"content": "hi"})
    assert third.status_code == 200, third.text
    assert unnumbered(third.json()["added"]) == [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "You said 'hi'"}]
    fourth = clients[4].post(url, json={"content": "jot C"})
    assert fourth.status_code == 200, fourth.text
    assert jotted_lines(calls) == ["2 jot A", "4 jotted A", "6 jot B", "8 jotted B", "3 hi",
                             "5 jot C", "7 jotted C"]
    assert jotted_lines(jotted) == ["A", "B", "C"]
    shown = clients[0].get(f"/api/conversations/{cid}").json()
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [
        ("system", "Be brief."), ("assistant", "Done: jotted B"), ("user", "hi"),
        ("assistant", "You said 'hi'"), ("user", "jot C"), ("assistant", ""),
        ("tool", "jotted C"), ("assistant", "Done: jotted C")]
    assert (shown["status"], shown["waiting_for"]) == ("waiting", {"type": "user",
                                                                   "prompt": None})
    if store is not None:
        stored = asyncio.run(load_stored(store, cid))
        [run] = stored.subroutines
        assert (run.label, run.index, run.inherited) == ("SubroutineTemplate(template_id='task')",
                                                         1, 1)
        assert [(m.role, m.content) for m in run.messages] == [
            ("system", "Be brief."), ("user", "jot A"), ("assistant", ""),
            ("tool", "jotted A"), ("assistant", "Done: jotted A"), ("user", "jot B"),
            ("assistant", ""), ("tool", "jotted B"), ("assistant", "Done: jotted B")]
        assert stored.child_length == 9


async def load_stored(store: Store, cid: str) -> Stored:
    await store.open()
    try:
        stored = await store.load(cid)
    finally:
        await store.close()
    assert stored is not None
    return stored
