"""What guards cost: the standard in-process conversation (benchmarks/conversation.py) on
MockModel, without guards and with an output ``pii`` guard under ``hold``.

Counted in instructions (``valgrind --tool=callgrind``; the machine these ran on was loaded far
past its cores, where wall-clock time is noise): the difference between a run of 2N and a run
of N conversations, divided by N, is one conversation's cost without the interpreter's start
and imports. ``--tree PATH`` runs another checkout's convo (the guard-free baseline: the
commit before guards).

    python benchmarks/guards.py [--n 100] [--tree PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

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
    assert session.outcome.model_calls == 2  # the guard adds no model call
"""


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
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--tree", help="a checkout without guards: the baseline")
    args = parser.parse_args()
    here = str(HERE.parent)
    free = per_conversation(here, args.n, False)
    guarded = per_conversation(here, args.n, True)
    print(f"guard-free conversation: {free / 1000:.1f}k instructions")
    print(f"with an output pii guard (hold): {guarded / 1000:.1f}k instructions "
          f"({guarded / free:.3f}x, +{(guarded / free - 1) * 100:.1f} %)")
    if args.tree:
        before = per_conversation(args.tree, args.n, False)
        print(f"guard-free, before guards ({args.tree}): {before / 1000:.1f}k instructions; "
              f"now {free / before:.3f}x")


if __name__ == "__main__":
    main()
