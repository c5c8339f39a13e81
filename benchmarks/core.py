"""The one core's figures (issue "One core"), measured against another checkout in one run:

    python benchmarks/core.py                      # this checkout only
    python benchmarks/core.py --before ../old      # ... and an older checkout, alternating

- the in-process conversation on MockModel (µs per conversation, sync);
- rebuilding a paused served conversation of 1,000 messages, beyond reading it (ms);
- four ``arun()`` conversations at once, each calling a 0.5 s synchronous tool (s, wall);
- ``import convo`` / ``import openai`` (this checkout).

Each figure is measured in a fresh process whose ``convo`` is the checkout's (``PYTHONPATH``),
alternating between the checkouts, and the median is kept. Results go to
benchmarks/results/core.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CONVERSATION = """
import sys, statistics
sys.path.insert(0, {here!r})
from inprocess import conversation_sync
print(statistics.median(conversation_sync(200, 5)) * 1e6)
"""

REBUILD = """
import sys
sys.path.insert(0, {here!r})
from serve_store import rebuild_times
row = rebuild_times([1000])["1000"]
print(row["beyond_read_ms"], row["read_ms"])
"""

CONCURRENT = """
import asyncio, time
from convo import FinishTool, LinearTemplate, Message, MockModel, Runner, ToolCall
from convo import ToolingTemplate, UserTemplate, tool

@tool
def slow() -> str:
    \"\"\"Take half a second.\"\"\"
    time.sleep(0.5)
    return "done"

template = LinearTemplate([UserTemplate("go"), ToolingTemplate([slow, FinishTool()])])

def model():
    return MockModel([Message("assistant", "", tool_calls=(ToolCall("s", "slow", {{}}),)),
                      Message("assistant", "", tool_calls=(ToolCall("f", "finish", {{}}),))])

async def main():
    started = time.perf_counter()
    await asyncio.gather(*(Runner(model(), template).arun() for _ in range(4)))
    return time.perf_counter() - started

print(asyncio.run(main()))
"""


def _run(code: str, tree: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code.format(here=str(HERE))], env=env,
                         capture_output=True, text=True, check=True, cwd=tree).stdout
    return [float(x) for x in out.split()]


def measure(trees: dict[str, Path], rounds: int) -> dict[str, dict[str, float]]:
    samples: dict[str, dict[str, list[float]]] = {
        name: {"conversation_us": [], "rebuild_beyond_read_ms": [], "read_ms": [],
               "four_sync_tools_s": []} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():  # alternating, so drift hits both alike
            row = samples[name]
            row["conversation_us"] += _run(CONVERSATION, tree)
            beyond, read = _run(REBUILD, tree)
            row["rebuild_beyond_read_ms"].append(beyond)
            row["read_ms"].append(read)
            row["four_sync_tools_s"] += _run(CONCURRENT, tree)
    return {name: {k: statistics.median(v) for k, v in row.items()}
            for name, row in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an older checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = {"now": ROOT}
    if args.before is not None:
        trees["before"] = args.before.resolve()
    results: dict[str, Any] = measure(trees, args.rounds)
    sys.path.insert(0, str(HERE))
    from inprocess import import_times

    imports = import_times(15)
    results["import"] = {"convo_ms": 1000 * statistics.median(imports["convo"]),
                         "openai_ms": 1000 * statistics.median(imports["openai"])}
    results["import"]["ratio"] = results["import"]["convo_ms"] / results["import"]["openai_ms"]
    if "before" in results:
        results["ratios"] = {k: results["now"][k] / results["before"][k]
                             for k in results["now"]}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "core.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
