"""``convo eval``'s overhead: 100 scenarios on a mock model vs plain concurrent ``arun()``.

    python benchmarks/eval.py [--scenarios 100] [--rounds 7]

Both sides run the standard conversation (benchmarks/conversation.py: 2 model calls, 1 tool
call) on a fresh ``MockModel`` each, all at once on one event loop. The eval side also builds
the user interface, makes the checks (status, tools called, a regex on the reply, the model-call
budget) and gathers the results. The target (issue 31): at least 0.8x the conversations per
second of plain ``arun()``. Time is the process's CPU time (all of it is on one thread), so
other processes on a shared machine disturb it less. Prints the best rounds and the ratio;
exits 1 below the target.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time

from conversation import FINAL, TEMPLATE, check, mock_model

from convo import Runner
from convo.testing import Scenario
from convo.testing._evaluation import aevaluate_all
from convo.testing._evaluation.evaluate import Setup

TARGET = 0.8


async def plain(n: int) -> float:
    gc.collect()
    started = time.process_time()
    sessions = await asyncio.gather(*(Runner(mock_model(), TEMPLATE).arun() for _ in range(n)))
    elapsed = time.process_time() - started
    for session in sessions:
        check(session)
    return n / elapsed


async def evaluated(n: int) -> float:
    scenarios = [Scenario(f"weather {i}", user=[], checks={
        "status": "completed", "tools_called": ["get_weather"], "reply_matches": FINAL[:10],
        "max_model_calls": 2}) for i in range(n)]
    setup = Setup(template=TEMPLATE, model=mock_model())
    gc.collect()
    started = time.process_time()
    results = await aevaluate_all(setup, scenarios, concurrency=n)
    elapsed = time.process_time() - started
    assert all(r.passed for r in results), [r.lines() for r in results if not r.passed]
    return n / elapsed


def measure(n: int, rounds: int) -> tuple[float, float]:
    """Conversations per second, plain ``arun()`` and ``evaluate``: the best of ``rounds``
    alternating rounds (a shared machine disturbs single rounds by far more than the gap)."""
    async def main() -> tuple[list[float], list[float]]:
        await plain(n), await evaluated(n)  # warm up
        a, b = [], []
        for _ in range(rounds):
            a.append(await plain(n))
            b.append(await evaluated(n))
        return a, b

    a, b = asyncio.run(main())
    return max(a), max(b)  # the best round: the least disturbed by other processes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    base, ours = measure(args.scenarios, args.rounds)
    ratio = ours / base
    print(f"plain arun(): {base:,.0f} conversations/s")
    print(f"evaluate:     {ours:,.0f} conversations/s ({args.scenarios} scenarios)")
    print(f"ratio: {ratio:.2f} (target >= {TARGET})")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
