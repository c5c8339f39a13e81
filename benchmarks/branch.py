"""Branching a 1,000-message conversation (API.md §28), next to rebuilding the same prefix.

    python benchmarks/branch.py      # prints the numbers, writes benchmarks/results/branch.json
    python benchmarks/branch.py --rounds 100     # fewer rounds (default 300; --quick: 5)

A conversation of 1,000 messages is made live on a mock model (a user message, a tool call
that changes ``state`` through its ``ToolContext``, its result, a reply: four messages a turn).
Then, in rounds, ``Runner.branch(saved, before=N)`` before the last user message, and the
rebuild of the same prefix as resume and a served rebuild do it (``Runner.start(saved=…)``
driven quietly up to the first request it cannot answer), each round the other one first. The
budget: a branch costs at most the rebuild + 5 ms (``overhead_ms``: the difference of the
medians). On a busy machine the medians move by milliseconds from run to run, so the result
also has the median of each round's difference (``paired_overhead_ms``), the fastest of each
and their difference (``min_overhead_ms``: the least interference), the same of the tenth
percentiles (``p10_overhead_ms``), the medians of the CPU time the process used for each
(``cpu_overhead_ms``, and paired: ``paired_cpu_overhead_ms``; the time spent waiting for a core
is not in them), and the load average.
"""

from __future__ import annotations

import gc
import json
import os
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


def measure(rounds: int = 300) -> dict[str, Any]:
    """``rounds`` rounds, each timing one branch and one rebuild, in turn first (so that
    neither always runs on a warmer cache or right after a collection)."""
    saved = conversation()
    before = MESSAGES - 4  # the last user message
    runner = Runner(MockModel([]), TEMPLATE, ScriptedInterface([]))
    prefix = Session(saved.messages[:before], saved.state, approvals=saved.approvals)

    def branch() -> Session:
        return runner.branch(saved, before=before)

    def rebuilt() -> Session:
        return rebuild(runner, prefix)

    times: dict[str, list[float]] = {"branch": [], "rebuild": []}
    cpu: dict[str, list[float]] = {"branch": [], "rebuild": []}
    made = branch()
    for i in range(rounds):
        for name, step in ((("branch", branch), ("rebuild", rebuilt)) if i % 2 == 0
                           else (("rebuild", rebuilt), ("branch", branch))):
            gc.collect()
            started, used = time.perf_counter(), time.process_time()
            step()
            times[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - used)
    assert len(made.messages) == before and len(made.state["notes"]) == TURNS - 1
    branched, rebuilds = times["branch"], times["rebuild"]
    # Each round's branch less its rebuild: the pairs ran side by side, under the same load.
    paired = [b - r for b, r in zip(branched, rebuilds, strict=True)]
    # The CPU time this process used for each: what the other processes of a busy machine
    # take while it waits for a core is not in it.
    cpu_paired = [b - r for b, r in zip(cpu["branch"], cpu["rebuild"], strict=True)]

    def ms(value: float) -> float:
        return round(value * 1000, 2)

    result: dict[str, Any] = {
        "messages": MESSAGES, "before": before, "rounds": rounds,
        "branch_ms": ms(statistics.median(branched)),
        "rebuild_ms": ms(statistics.median(rebuilds))}
    result["overhead_ms"] = round(result["branch_ms"] - result["rebuild_ms"], 2)
    result["paired_overhead_ms"] = ms(statistics.median(paired))
    # The fastest of each: what they cost with the least interference from a busy machine.
    result["branch_min_ms"] = ms(min(branched))
    result["rebuild_min_ms"] = ms(min(rebuilds))
    result["min_overhead_ms"] = round(result["branch_min_ms"] - result["rebuild_min_ms"], 2)
    # The tenth percentile of each: the quick runs, less at the mercy of one lucky round.
    result["branch_p10_ms"] = ms(statistics.quantiles(branched, n=10)[0])
    result["rebuild_p10_ms"] = ms(statistics.quantiles(rebuilds, n=10)[0])
    result["p10_overhead_ms"] = round(result["branch_p10_ms"] - result["rebuild_p10_ms"], 2)
    result["branch_cpu_ms"] = ms(statistics.median(cpu["branch"]))
    result["rebuild_cpu_ms"] = ms(statistics.median(cpu["rebuild"]))
    result["cpu_overhead_ms"] = round(result["branch_cpu_ms"] - result["rebuild_cpu_ms"], 2)
    result["paired_cpu_overhead_ms"] = ms(statistics.median(cpu_paired))
    result["load_average"] = round(os.getloadavg()[0], 1)
    return result


def main() -> None:
    rounds = 5 if "--quick" in sys.argv else 300
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    result = measure(rounds)
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results" / "branch.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    if result["overhead_ms"] > 5:
        raise SystemExit(f"a branch costs {result['overhead_ms']} ms more than the rebuild of "
                         "its prefix (medians): over the 5 ms budget")


if __name__ == "__main__":
    main()
