"""A note-keeping agent for the resume tests: its tools keep their notes in session.state.

``remember <fact>`` makes the model call ``remember``; ``recall`` makes it call ``recall``;
after a tool result the model repeats it. Each tool prints when it runs, so a test can see
that a resumed run does not run a saved call again.
"""

import sys
from pathlib import Path

from convo import Message, ToolCall
from convo.models import FunctionModel
from convo.tools import ToolContext, tool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from weather_tools import chat_loop


@tool
def remember(ctx: ToolContext, fact: str) -> str:
    """Remember a fact.

    Args:
        fact: What to remember.
    """
    print(f"(remember ran for {fact!r})", flush=True)
    ctx.state["notes"] = [*ctx.state.get("notes", []), fact]
    return f"Noted {fact!r} ({len(ctx.state['notes'])} notes)."


@tool
def recall(ctx: ToolContext) -> str:
    """Everything remembered so far."""
    print("(recall ran)", flush=True)
    return ", ".join(ctx.state.get("notes", [])) or "nothing"


template = chat_loop(remember, recall, system="You keep notes.")


def _reply(messages, tools):
    last = messages[-1]
    if last.role == "tool":
        return f"Tool says: {last.content}"
    call_id = f"call_{len(messages)}"
    if last.content.startswith("remember "):
        return Message("assistant", "", tool_calls=(
            ToolCall(call_id, "remember", {"fact": last.content[len("remember "):]}),))
    if last.content == "recall":
        return Message("assistant", "", tool_calls=(ToolCall(call_id, "recall", {}),))
    return "Say 'remember <fact>' or 'recall'."


mock_model = FunctionModel(_reply)
