"""Branching a 1,000-message conversation (API.md §28), next to rebuilding the same prefix.

    python benchmarks/branch.py      # prints the numbers, writes benchmarks/results/branch.json

A conversation of 1,000 messages is made live on a mock model (a user message, a tool call
that changes ``state`` through its ``ToolContext``, its result, a reply: four messages a turn).
Then, alternately, ``Runner.branch(saved, before=N)`` before the last user message, and the
rebuild of the same prefix as resume and a served rebuild do it (``Runner.start(saved=…)``
driven quietly up to the first request it cannot answer). The budget: a branch costs at most
the rebuild + 5 ms (``overhead_ms``: the difference of the medians).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from convo import (
    LoopTemplate,
    MockModel,
    Runner,
    ScriptedInterface,
    Session,
    ToolContext,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo._run.branch import Holding
from convo._run.driver import drive

MESSAGES = 1000
TURNS = MESSAGES // 4


@tool
def note(context: ToolContext, text: str) -> str:
    """Keep a note."""
    context.state.setdefault("notes", []).append(text)
    return f"noted {text}"


TEMPLATE = LoopTemplate([UserTemplate(), ToolingTemplate([note])])


def conversation() -> Session:
    replies: list[Any] = []
    for i in range(TURNS):
        replies += [f"{{note(text='n{i}')}}", f"Noted number {i}."]
    users = [f"note n{i}, please" for i in range(TURNS)]
    session = Runner(MockModel(replies), TEMPLATE, ScriptedInterface(users)).run()
    assert len(session.messages) == MESSAGES, len(session.messages)
    return session


def rebuild(runner: Runner, prefix: Session) -> Session:
    """The prefix replayed as a resume or a served rebuild replays it, to its first pause."""
    run = runner.start(saved=prefix, layers=(Holding,))
    run.answerer.quiet()
    drive(run.driver, run.answerer)
    session = run.session
    run.driver.close()
    return session


def measure(repeats: int = 30) -> dict[str, float]:
    saved = conversation()
    before = MESSAGES - 4  # the last user message
    runner = Runner(MockModel([]), TEMPLATE, ScriptedInterface([]))
    prefix = Session(saved.messages[:before], saved.state, approvals=saved.approvals)
    branched, rebuilt = [], []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        branch = runner.branch(saved, before=before)
        branched.append(time.perf_counter() - started)
        gc.collect()
        started = time.perf_counter()
        rebuild(runner, prefix)
        rebuilt.append(time.perf_counter() - started)
    assert len(branch.messages) == before and len(branch.state["notes"]) == TURNS - 1
    result = {"messages": MESSAGES, "before": before,
              "branch_ms": round(statistics.median(branched) * 1000, 2),
              "rebuild_ms": round(statistics.median(rebuilt) * 1000, 2)}
    result["overhead_ms"] = round(result["branch_ms"] - result["rebuild_ms"], 2)
    # The fastest of each: what they cost with the least interference from a busy machine.
    result["branch_min_ms"] = round(min(branched) * 1000, 2)
    result["rebuild_min_ms"] = round(min(rebuilt) * 1000, 2)
    return result


def main() -> None:
    result = measure(5 if "--quick" in sys.argv else 60)
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results" / "branch.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    if result["overhead_ms"] > 5:
        raise SystemExit(f"a branch costs {result['overhead_ms']} ms more than the rebuild of "
                         "its prefix: over the 5 ms budget")


if __name__ == "__main__":
    main()
