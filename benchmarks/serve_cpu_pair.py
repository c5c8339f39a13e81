"""``serve_cpu.py`` under two Pythons, alternating, in one run: ``--before`` is the Python of a
venv whose ``convo`` is an earlier commit (a ``git worktree`` of it, installed there: a
``PYTHONPATH`` does not override an editable install), the other this one. Each round is one
process of each, in turn (which goes first alternates), so a load that changes over the run
falls on both; then each side's Python function calls per turn (``--calls``).

    git worktree add ../before COMMIT && python -m venv ../before/.venv && ...
    python benchmarks/serve_cpu_pair.py --before ../before/.venv/bin/python [--rounds 10]
        [--turns 1000] [-- more serve_cpu.py options]

Prints each round's ms per turn of both, the medians, their ratio, the calls per turn of
both, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "serve_cpu.py"


def _run(python: str, *options: str) -> float:
    """One process of ``serve_cpu.py``: the number it prints last (its median, or calls)."""
    done = subprocess.run([python, str(SCRIPT), *options], capture_output=True, text=True,
                          cwd="/", check=True)  # (not the checkout: its convo first on the path)
    return float(re.findall(r"[\d.]+", done.stdout.strip().splitlines()[-1])[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="the Python of the earlier commit")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("more", nargs="*", help="options for serve_cpu.py (after --)")
    args = parser.parse_args()
    sides = {"before": args.before, "after": sys.executable}
    load = os.getloadavg()
    times: dict[str, list[float]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
        for side in order:
            times[side].append(_run(sides[side], "--rounds", "1", "--turns",
                                    str(args.turns), *args.more))
        print(f"round {round_ + 1}: before {times['before'][-1]:.3f} ms, "
              f"after {times['after'][-1]:.3f} ms", flush=True)
    medians = {side: statistics.median(ms) for side, ms in times.items()}
    calls = {side: _run(python, "--calls", "--turns", "200", *args.more)
             for side, python in sides.items()}
    print(f"median before {medians['before']:.3f} ms, after {medians['after']:.3f} ms: "
          f"{medians['after'] / medians['before']:.3f}x")
    print(f"Python function calls per turn: before {calls['before']:.1f}, "
          f"after {calls['after']:.1f}")
    print(f"load average: {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
