"""A deploy with a changed template: a conversation waiting for the user, whose workflow
continued as new after its last turn, goes on on the new template (its run is rebuilt from the
store on the new worker); nothing stored is made again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporal_kit import refund, start, texts, worker

from convo import (
    FinishTool,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


NEW = LinearTemplate([SystemTemplate("Be brief."), LoopTemplate([
    UserTemplate(), ToolingTemplate([refund, lookup, FinishTool()])])])


def test_a_waiting_conversation_goes_on_on_the_new_template(temporal: str,
                                                            tmp_path: Path) -> None:
    queue = f"deploy-{tmp_path.name}"

    async def go() -> None:
        async with worker(temporal, tmp_path, queue=queue, continue_every=1) as (
                client, _, _, old_model):
            await start(client, queue, "d1")
            handle = client.get_workflow_handle("convo-d1")
            said = await handle.execute_update("message", {"content": "tools?"})
            assert texts(said["added"])[-1] == ("assistant", "finish, refund")
        # the old worker is gone; the new one has another template
        async with worker(temporal, tmp_path, queue=queue, continue_every=1,
                          template=NEW) as (client, _, store, new_model):
            handle = client.get_workflow_handle("convo-d1")
            said = await handle.execute_update("message", {"content": "tools?"})
            assert texts(said["added"]) == [("user", "tools?"),
                                            ("assistant", "finish, lookup, refund")]
            assert old_model.calls == ["tools?"]
            assert new_model.calls == ["tools?"]  # the first turn's call was not made again
            stored = await store.load("d1")
            assert stored is not None
            assert [m.content for m in stored.messages] == [
                "Be brief.", "tools?", "finish, refund", "tools?", "finish, lookup, refund"]

    asyncio.run(go())
