"""Guards on the Temporal engine: an output guard that shows the reply live (`stream="live"`)
and trips takes the streamed text back with SSE `retract`, sent from the workflow through the
store's notes as the text was (a `convo worker` process and a `convo serve --engine
temporal://…` process on one SQLite store; the gated model streams "partial " and waits at its
gate until the test read the delta)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporal_kit import Front, Worker, sse, start, texts, worker

REFUSAL = "Sorry, I can't help with that."


def test_a_live_guard_that_trips_retracts_the_streamed_text(temporal: str,
                                                            tmp_path: Path) -> None:
    queue = f"guard-{tmp_path.name}"
    worker = Worker(temporal, tmp_path, queue, CONVO_TEST_LIVE_GUARD="partial")
    front: Front | None = None
    try:
        front = Front(temporal, tmp_path, queue, CONVO_TEST_LIVE_GUARD="partial")
        cid = front.client.post("/api/conversations", json={}).json()["id"]
        raw = b""
        with front.client.stream("POST", f"/api/conversations/{cid}/messages",
                                 json={"content": "wait"},
                                 headers={"Accept": "text/event-stream"}) as streamed:
            assert streamed.status_code == 200
            for chunk in streamed.iter_bytes():
                raw += chunk
                if b"event: delta\n" in raw:  # the text is shown while the model waits
                    (tmp_path / "gate").touch()
        shown = front.client.get(f"/api/conversations/{cid}").json()
    finally:
        (tmp_path / "gate").touch()
        if front is not None:
            front.stop()
        worker.stop()
    text = raw.decode()
    events = list(sse(text.splitlines()))
    assert [e for e, _ in events] == ["message", "delta", "retract", "message", "done"]
    user, delta, retract, reply, done = (data for _, data in events)
    assert (user["role"], user["content"]) == ("user", "wait")
    assert delta == {"text": "partial "}
    assert (reply["role"], reply["content"]) == ("assistant", REFUSAL)
    assert retract == {"message_id": reply["id"]}
    assert "event: delta\ndata: {\"text\": \"partial \"}\n\nevent: retract\ndata: " + \
        json.dumps({"message_id": reply["id"]}) + "\n\nevent: message\n" in text
    assert "partial after wait" not in text  # the original is never sent to the client
    assert reply["metadata"]["guard"] == {"name": "banned", "action": "block",
                                          "reason": "banned"}
    assert done["added"] == [user, reply]
    assert shown["messages"][-2:] == [user, reply]
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["model wait"]


def test_an_async_guard_check_runs_in_an_activity(temporal: str, tmp_path: Path) -> None:
    """An `async def` output check (it may do I/O) is the activity `convo.guard`, never
    workflow code: it sees the conversation as stored (the user's message, not yet the reply
    it checks), and a trip blocks the reply as in one process."""
    from temporalio import activity, workflow

    from convo import Guard

    seen: list[tuple[bool, bool, list[str]]] = []

    async def careful(text: str, ctx: Any) -> bool | str:
        seen.append((activity.in_activity(), workflow.in_workflow(),
                     [m.content for m in ctx.session.messages]))
        return "secret" not in text or "it says secret"

    async def go() -> tuple[Any, Any]:
        async with worker(temporal, tmp_path, runner={"guards": [Guard(careful, on="output")]}
                          ) as (client, queue, _, _):
            handle = await start(client, queue, f"g-{tmp_path.name}")
            return (await handle.execute_update("message", {"content": "hi"}),
                    await handle.execute_update("message", {"content": "a secret"}))

    passed, blocked = asyncio.run(go())
    assert texts(passed["added"]) == [("user", "hi"), ("assistant", "You said 'hi'")]
    assert texts(blocked["added"]) == [("user", "a secret"), ("assistant", REFUSAL)]
    assert blocked["added"][1]["metadata"]["guard"] == {
        "name": "careful", "action": "block", "reason": "it says secret"}
    assert seen == [(True, False, ["Be brief.", "hi"]),
                    (True, False, ["Be brief.", "hi", "You said 'hi'", "a secret"])]


def test_an_async_guard_made_at_runtime_trips_instead_of_running_in_the_workflow(
        temporal: str, tmp_path: Path) -> None:
    """A turn that is not in the template's tree (made inside another template's `render`, or
    held but not listed as a child) has guards no worker can find by place: its async check is
    not run (it would run in workflow code); it trips, saying why."""
    import attrs

    from convo import AssistantTemplate, Guard, LinearTemplate, SystemTemplate, UserTemplate
    from convo._temporal.checks import UNPLACED
    from convo.templates import Template

    ran: list[str] = []

    async def made_late(text: str, ctx: Any) -> bool:
        ran.append(text)
        return True

    @attrs.define(slots=True, eq=False)
    class Late(Template):
        """Renders a turn it does not list among its children (as one it made would be)."""

        turn: Any = None

        def render(self, session: Any) -> Any:
            return (yield from self.turn.render(session))

    hidden = AssistantTemplate(guards=[Guard(made_late, on="output")])
    template = LinearTemplate([SystemTemplate("Be brief."), UserTemplate(), Late(hidden)])

    async def go() -> Any:
        async with worker(temporal, tmp_path, template=template) as (client, queue, _, _):
            handle = await start(client, queue, f"late-{tmp_path.name}")
            return await handle.execute_update("message", {"content": "hi"})

    said = asyncio.run(go())
    assert texts(said["added"]) == [("user", "hi"), ("assistant", REFUSAL)], said
    assert said["added"][1]["metadata"]["guard"] == {
        "name": "made_late", "action": "block",
        "reason": UNPLACED.format(name="made_late")}
    assert ran == []
