"""A bot for the fault-injection suite (tests/serve/faults/): its model and its tool can be held
at a gate, so a test can kill the server, cut the store or cancel while they run.

Files in $CONVO_TEST_DIR: ``calls.txt`` gets a line per model call (``model <last text>``),
per cancelled model call (``cancelled <last text>``) and per tool call (``tool <call id>``);
``entered`` appears when a gated call starts; it waits until ``gate`` exists. Replies, by the
last user message:
- ``wait``: streams "partial ", waits at the gate, then says "after wait";
- ``tool``: calls ``slow_note`` (which waits at the gate), then ends with ``finish``;
- ``pick``: calls the front end's ``pick_color`` (AG-UI), then says what was picked;
- ``big N``: a reply of N × 100 characters;
- anything else: echoed.

With $CONVO_TEST_LIVE_GUARD set, an output guard that shows replies live (``stream="live"``)
blocks any reply containing that text.
"""

import asyncio
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from convo import (
    FinishTool,
    Guard,
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    ToolCall,
    ToolContext,
    ToolingTemplate,
    UserTemplate,
    tool,
)

DIR = pathlib.Path(os.environ["CONVO_TEST_DIR"])


def _log(line: str) -> None:
    with open(DIR / "calls.txt", "a", encoding="utf-8") as file:
        file.write(line + "\n")


async def _gate() -> None:
    (DIR / "entered").touch()
    while not (DIR / "gate").exists():
        await asyncio.sleep(0.02)


@tool
async def slow_note(context: ToolContext, text: str) -> str:
    """Write a note down, slowly."""
    _log(f"tool {context.call_id}")
    await _gate()
    return f"noted {text}"


class GatedModel:
    async def acomplete(self, messages: Sequence[Message], tools: Any = (), *,
                        on_delta: Any = None) -> Message:
        last = messages[-1]
        if last.role == "tool" and last.name == "pick_color":  # a front end's tool (AG-UI)
            return Message("assistant", f"You picked {last.content}")
        if last.role == "tool":
            return Message("assistant", f"ok, {last.content}",
                           tool_calls=[ToolCall(f"f{len(messages)}", "finish", {})])
        _log(f"model {last.content}")
        if last.content == "wait":
            if on_delta is not None:
                on_delta("partial ")
            try:
                await _gate()
            except asyncio.CancelledError:
                _log(f"cancelled {last.content}")
                raise
            return Message("assistant", "partial after wait")
        if last.content == "pick":
            return Message("assistant", "", tool_calls=[
                ToolCall("call_1", "pick_color", {"hint": "warm"})])
        if last.content == "tool":
            return Message("assistant", "", tool_calls=[
                ToolCall(f"t{len(messages)}", "slow_note", {"text": "hi"})])
        if last.content.startswith("big "):
            return Message("assistant", "x" * 100 * int(last.content[4:]))
        return Message("assistant", f"You said {last.content!r}")

    def complete(self, messages: Sequence[Message], tools: Any = (), *,
                 on_delta: Any = None) -> Message:
        raise NotImplementedError("served: only acomplete is called")


def _hooked(session: Any) -> None:
    session.state["hooked"] = session.state.get("hooked", 0) + 1


# $CONVO_TEST_HOOKED: a structural change (a hook before each agent turn), as a deploy makes.
template = LinearTemplate([SystemTemplate("Gated."), LoopTemplate([
    UserTemplate(), ToolingTemplate([slow_note, FinishTool()],
                                    before=_hooked if os.environ.get("CONVO_TEST_HOOKED")
                                    else ())])])
mock_model = GatedModel()
_BANNED = os.environ.get("CONVO_TEST_LIVE_GUARD")
guards = [Guard(lambda text, ctx: _BANNED not in text, on="output", stream="live",
                name="banned")] if _BANNED else []
