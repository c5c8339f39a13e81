"""In-process measures: the conversation on MockModel, import time, memory per idle message."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from typing import Any

from conversation import TEMPLATE, check, mock_model

from convo import Message, Runner, Session, ToolCall


def conversation_sync(conversations: int, rounds: int) -> list[float]:
    """Seconds per conversation, one value per round: a new MockModel and Runner each time."""

    def one_round() -> float:
        gc.collect()
        started = time.perf_counter()
        for _ in range(conversations):
            check(Runner(mock_model(), TEMPLATE).run())
        return (time.perf_counter() - started) / conversations

    one_round()  # warm up
    return [one_round() for _ in range(rounds)]


def conversation_async(conversations: int, rounds: int) -> list[float]:
    async def one_round() -> float:
        gc.collect()
        started = time.perf_counter()
        for _ in range(conversations):
            check(await Runner(mock_model(), TEMPLATE).arun())
        return (time.perf_counter() - started) / conversations

    async def main() -> list[float]:
        await one_round()
        return [await one_round() for _ in range(rounds)]

    return asyncio.run(main())


def calls_per_conversation(conversations: int = 50) -> float:
    """Function calls per conversation (Python functions and builtins, as cProfile counts
    them; a generator's resumption is a call): a deterministic figure, where wall time on a
    loaded machine is not. Warmed up first, so imports and first-call caches are not counted."""
    import cProfile
    import pstats

    for _ in range(20):
        check(Runner(mock_model(), TEMPLATE).run())
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(conversations):
        check(Runner(mock_model(), TEMPLATE).run())
    profile.disable()
    stats: dict[Any, tuple[Any, ...]] = pstats.Stats(profile).stats
    return sum(row[1] for row in stats.values()) / conversations


# -- import time: each sample in a fresh interpreter -----------------------------------------

_IMPORT = (
    "import sys, time\n"
    "t = time.perf_counter()\n"
    "import {module}\n"
    "t = time.perf_counter() - t\n"
    "print(t, 'openai' in sys.modules)\n"
)


def import_times(samples: int) -> dict[str, Any]:
    """Seconds to ``import convo`` and ``import openai``, alternating, fresh processes."""
    times: dict[str, list[float]] = {"convo": [], "openai": []}
    pulls_openai = False
    for _ in range(samples):
        for module in ("convo", "openai"):
            out = subprocess.run([sys.executable, "-c", _IMPORT.format(module=module)],
                                 capture_output=True, text=True, check=True).stdout.split()
            times[module].append(float(out[0]))
            if module == "convo":
                pulls_openai = pulls_openai or out[1] == "True"
    return {**times, "convo_imports_openai": pulls_openai}


# -- memory: 1,000 idle sessions of 20 messages ----------------------------------------------

SESSIONS, MESSAGES = 1000, 20


def _text(s: int, i: int) -> str:
    return f"Message {i} of session {s}: what is the weather like in Oslo today?"


def _call_id(s: int, i: int) -> str:
    return f"call_{s}_{i}"


def _convo_sessions() -> list[Session]:
    """system, then user / assistant tool call / tool result / assistant text, repeated."""
    sessions = []
    for s in range(SESSIONS):
        messages = [Message("system", f"You are assistant {s}.")]
        for i in range(1, MESSAGES):
            kind = i % 4
            if kind == 1:
                messages.append(Message("user", _text(s, i)))
            elif kind == 2:
                call = ToolCall(_call_id(s, i), "get_weather", {"city": f"Oslo {i}"})
                messages.append(Message("assistant", "", tool_calls=(call,)))
            elif kind == 3:
                messages.append(Message("tool", f"Sunny, {i} degrees",
                                        tool_call_id=_call_id(s, i), name="get_weather"))
            else:
                messages.append(Message("assistant", _text(s, i)))
        sessions.append(Session(messages))
    return sessions


def _dict_sessions() -> list[list[dict[str, Any]]]:
    """The same conversations as plain lists of dicts (Chat Completions style)."""
    sessions = []
    for s in range(SESSIONS):
        messages: list[dict[str, Any]] = [{"role": "system", "content": f"You are assistant {s}."}]
        for i in range(1, MESSAGES):
            kind = i % 4
            if kind == 1:
                messages.append({"role": "user", "content": _text(s, i)})
            elif kind == 2:
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"id": _call_id(s, i), "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": f"Oslo {i}"}}},
                ]})
            elif kind == 3:
                messages.append({"role": "tool", "content": f"Sunny, {i} degrees",
                                 "tool_call_id": _call_id(s, i), "name": "get_weather"})
            else:
                messages.append({"role": "assistant", "content": _text(s, i)})
        sessions.append(messages)
    return sessions


def _bytes_per_message(build: Any) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    data = build()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del data
    return used / (SESSIONS * MESSAGES)


def memory() -> dict[str, float]:
    """Bytes per idle message (everything the sessions hold, text included), both ways."""
    return {"convo": _bytes_per_message(_convo_sessions),
            "dicts": _bytes_per_message(_dict_sessions)}


if __name__ == "__main__":
    # `python inprocess.py memory`: the memory measure in a fresh interpreter, as JSON;
    # `python inprocess.py calls`: function calls per conversation.
    if sys.argv[1:] == ["calls"]:
        print(json.dumps({"calls_per_conversation": calls_per_conversation()}))
    else:
        print(json.dumps(memory()))
