"""What guards cost: the standard in-process conversation (benchmarks/conversation.py) on
MockModel, without guards and with an output ``pii`` guard under ``hold``, all in one run.

Two figures, each a ratio measured round by round with the settings taking turns (ABBA), in
each process's CPU time (``time.thread_time``: what the work costs, not how long a loaded
machine kept it waiting), the median and the interquartile range over the rounds:

- with a guard: the conversation with ``Runner(..., guards=[pii()])`` over the same without
  guards, in one process (target: at most 1.05, and no model call added: every run is
  checked to make exactly 2);
- guard-free: this checkout's conversation without guards over the same conversation run by
  ``--tree PATH``, a checkout from before guards (target: at most 1.01). Each checkout runs in
  a worker process of its own, started once; the rounds alternate between the workers.

``--instructions`` also counts both conversations in instructions (``valgrind
--tool=callgrind``; the difference between runs of 2N and N conversations, per conversation,
N being ``--n``), which load does not move.

    python benchmarks/guards.py [--rounds 21] [--n 400] [--tree PATH] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_GUARD, TARGET_FREE = 1.05, 1.01

WORKER = """
import gc, sys, time
sys.path.insert(0, {tree!r}); sys.path.insert(1, {here!r})
from conversation import TEMPLATE, check, mock_model
from convo import Runner

def free():
    check(Runner(mock_model(), TEMPLATE).run())

def guarded():
    session = Runner(mock_model(), TEMPLATE, guards=GUARDS).run()
    check(session)
    assert session.outcome.model_calls == 2  # the guard adds no model call

GUARDS = None
for line in sys.stdin:
    kind, n = line.split()
    if kind == "pii" and GUARDS is None:
        from convo.guards import pii
        GUARDS = [pii()]
    work = guarded if kind == "pii" else free
    for _ in range(20):  # warm: the first conversations of a process import and compile
        work()
    gc.collect()
    started = time.thread_time()
    for _ in range(int(n)):
        work()
    print((time.thread_time() - started) / int(n) * 1e6, flush=True)
"""

ONE = """
import sys
sys.path.insert(0, {tree!r}); sys.path.insert(1, {here!r})
from conversation import TEMPLATE, check, mock_model
from convo import Runner
guards = []
if {pii!r}:
    from convo.guards import pii
    guards = [pii()]
for _ in range({n}):
    session = Runner(mock_model(), TEMPLATE, guards=guards).run() if guards else \\
        Runner(mock_model(), TEMPLATE).run()
    check(session)
"""


class Worker:
    """A process running one checkout's conversations when asked (``measure``)."""

    def __init__(self, tree: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER.format(tree=tree, here=str(HERE))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"})

    def measure(self, kind: str, n: int) -> float:
        """µs of CPU time per conversation (``kind``: ``free`` or ``pii``)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{kind} {n}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def summary(ratios: list[float]) -> str:
    q = statistics.quantiles(ratios, n=4)
    return f"{statistics.median(ratios):.3f}x (IQR {q[0]:.3f}-{q[2]:.3f})"


def instructions(tree: str, n: int, pii: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "one.py"
        script.write_text(ONE.format(tree=tree, here=str(HERE), n=n, pii=pii))
        out = Path(tmp) / "cg.out"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, str(script)], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
        assert found is not None
        return int(found.group(1))


def per_conversation(tree: str, n: int, pii: bool) -> float:
    return (instructions(tree, 2 * n, pii) - instructions(tree, n, pii)) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--n", type=int, default=400, help="conversations per measure")
    parser.add_argument("--tree", help="a checkout from before guards: the guard-free baseline")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions with callgrind (slow)")
    args = parser.parse_args()
    here = str(HERE.parent)
    now = Worker(here)
    before = Worker(args.tree) if args.tree else None
    guard_ratios: list[float] = []
    free_ratios: list[float] = []
    times: dict[str, list[float]] = {"free": [], "pii": [], "before": []}
    try:
        for r in range(args.rounds):
            order = ["free", "pii", "before"] if r % 2 == 0 else ["before", "pii", "free"]
            got: dict[str, float] = {}
            for kind in order:
                if kind == "before":
                    if before is not None:
                        got[kind] = before.measure("free", args.n)
                else:
                    got[kind] = now.measure(kind, args.n)
            for kind, us in got.items():
                times[kind].append(us)
            guard_ratios.append(got["pii"] / got["free"])
            if "before" in got:
                free_ratios.append(got["free"] / got["before"])
    finally:
        now.close()
        if before is not None:
            before.close()
    print(f"{args.rounds} rounds of {args.n} conversations each, load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    print(f"guard-free conversation: {statistics.median(times['free']):.1f} µs (median)")
    print(f"with an output pii guard (hold): {statistics.median(times['pii']):.1f} µs; "
          f"ratio {summary(guard_ratios)}, target <= {TARGET_GUARD}")
    if free_ratios:
        print(f"guard-free, before guards ({args.tree}): "
              f"{statistics.median(times['before']):.1f} µs; now {summary(free_ratios)}, "
              f"target <= {TARGET_FREE}")
    if args.instructions:
        free = per_conversation(here, args.n, False)
        guarded = per_conversation(here, args.n, True)
        print(f"instructions: guard-free {free / 1000:.1f}k, with the guard "
              f"{guarded / 1000:.1f}k ({guarded / free:.3f}x)")
        if args.tree:
            old = per_conversation(args.tree, args.n, False)
            print(f"instructions before guards: {old / 1000:.1f}k (now {free / old:.3f}x)")


if __name__ == "__main__":
    main()
