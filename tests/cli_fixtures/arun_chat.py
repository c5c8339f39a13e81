"""A terminal chat that a script runs with ``asyncio.run(CommandLineRunner(...).arun())``, for
the Ctrl-C tests of ``arun``. ``argv[1]``: where the session is written (JSON) when the run
returns.

What the model does depends on the user's message: ``hang`` streams ``Partial answer`` and
then awaits what never comes; ``block`` streams ``Half`` and then blocks the thread (a
blocking wait on the event loop's thread); ``think`` says ``(the model is thinking)`` and
awaits, nothing streamed; ``stubborn`` ignores the first cancel; ``tool`` calls ``quick`` and
``wait`` (an async tool that awaits what never comes) at once; ``block tool`` calls
``block``, a tool that blocks the thread; anything else is echoed.
"""

import asyncio
import sys
import threading
from pathlib import Path

from convo import CommandLineRunner, Message, ToolCall
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool


@tool(inline=True)  # on the loop: it is done before `wait` starts, whatever the machine's load
def quick() -> str:
    """Answer at once."""
    return "done"


@tool
async def wait() -> str:
    """Wait for something that never comes."""
    print("(the tool is waiting)", flush=True)
    await asyncio.Event().wait()
    return "never"


@tool
def block() -> str:
    """Block the thread until something that never comes."""
    print("(the tool is blocking)", flush=True)
    threading.Event().wait()
    return "never"


class SlowModel:
    def complete(self, messages, tools=(), *, on_delta=None):
        raise NotImplementedError("this chat runs under arun()")

    async def acomplete(self, messages, tools=(), *, on_delta=None):
        last = messages[-1]
        if last.role == "tool":
            results = [m.content for m in messages if m.role == "tool"]
            return Message("assistant", f"The tools said: {results}")
        text = last.content
        if text == "tool":
            return Message("assistant", "", tool_calls=[ToolCall("call_1", "quick"),
                                                        ToolCall("call_2", "wait")])
        if text == "block tool":
            return Message("assistant", "", tool_calls=[ToolCall("call_3", "block")])
        if text == "hang":
            on_delta("Partial")
            on_delta(" answer")
            await asyncio.Event().wait()
        if text == "block":
            on_delta("Half")
            threading.Event().wait()
        if text == "think":
            print("(the model is thinking)", flush=True)
            await asyncio.Event().wait()
        if text == "stubborn":
            try:  # Ctrl-C cancels the await, or interrupts the code before it
                print("(the model is thinking)", flush=True)
                await asyncio.Event().wait()
            except (asyncio.CancelledError, KeyboardInterrupt):
                print("(the model ignores Ctrl-C)", flush=True)
                await asyncio.Event().wait()
        on_delta(f"You said: {text}")
        return Message("assistant", f"You said: {text}")


async def main() -> None:
    template = LoopTemplate([UserTemplate(), ToolingTemplate([quick, wait, block])])
    session = await CommandLineRunner(SlowModel(), template, exit_on_error=False).arun()
    Path(sys.argv[1]).write_text(session.to_json())
    print("(arun returned)", flush=True)


asyncio.run(main())
