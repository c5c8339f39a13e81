"""CPU instructions of the core's two hot paths, counted with valgrind, on this checkout and
(``--before PATH``) another one, side by side:

- the in-process conversation (``inprocess.conversation_sync``'s: MockModel, the standard
  template), per conversation;
- a served rebuild of a paused conversation of 1,001 messages from a memory store, the read
  included (``Engine._rebuild``, as ``serve_store.rebuild_times`` times it), per rebuild;
- a served turn (``serve_cpu.py``'s: the app through ASGI, SQLite, ``FunctionModel``, the JSON
  answer, after its 100 warm-up turns), per turn;
- the conversation over the wire: ``OpenAIModel`` against the fake model server
  (``model_server.py``, started once, in a process of its own that is not counted), per
  conversation; ``wire-raw`` is the raw openai SDK's same two calls, so that convo's wire
  ratio can be compared between checkouts without a clock.

Instructions are counted, not timed, so load on the machine does not move them: each figure is
the difference between two runs in fresh processes under ``valgrind --tool=callgrind``, one
doing twice the work of the other, divided by the work added (set-up, imports, warm-up and
the building of the stored conversation cancel out). ``PYTHONHASHSEED=0``; each checkout's
modules are compiled before the runs. Each checkout runs under its own ``.venv/bin/python``
where it has one (``--python``/``--before-python`` to choose).

    python benchmarks/instructions.py [--before PATH]
        [--only conversation|rebuild|served|wire|wire-raw]
        [--n 200] [--rebuilds 2] [--turns 200] [--wire 100] [--keep DIR]

``--keep DIR`` keeps the callgrind files of the longer runs (``DIR/<side>-<measure>.out``):
``callgrind_annotate --inclusive=yes`` on both shows where the instructions go, by C function
(the interpreter's, attrs' generated code runs as Python in it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Both run with this checkout's benchmarks/ first on the path (the same conversation and bot
# for both sides) and the measured checkout's convo (PYTHONPATH).
CONVERSATION = """
import sys
sys.path.insert(0, {here!r})
from conversation import TEMPLATE, check, mock_model
from convo import Runner

for _ in range(20):  # warm up: first calls, caches
    check(Runner(mock_model(), TEMPLATE).run())
for _ in range({n}):
    check(Runner(mock_model(), TEMPLATE).run())
"""

REBUILD = """
import asyncio, sys
sys.path.insert(0, {here!r})
from serve_bot import inline_template, template
from convo import FunctionModel, Runner
try:
    from convo.serve._engine import Engine
    from convo.serve._stores import MemoryStore
except ImportError:  # a checkout before the modules were made private
    from convo.serve.engine import Engine
    from convo.serve.store import MemoryStore

def reply(messages, tools):
    return "Sunny." if messages[-1].role == "tool" else "{{get_weather(city='Oslo')}}"

async def main():
    store = MemoryStore()
    # Built with the tool run inline (no worker threads, whose waits would make the count
    # move); rebuilt with the benchmark's bot: the stored messages are the same.
    builder = Engine(Runner(FunctionModel(reply), inline_template or template,
                            raise_errors=False, max_messages=10**6), store)
    _, body = await builder.create({{}}, None)
    cid = body["id"]
    while len(builder._cache[cid].session.messages) < 1000:
        async with builder.turn(cid) as live:
            await builder.message(live, "weather?", None)
    assert len(builder._cache[cid].session.messages) == 1001
    engine = Engine(Runner(FunctionModel(reply), template, raise_errors=False,
                           max_messages=10**6), store)
    await engine._rebuild(cid)  # warm up
    for _ in range({n}):
        live = await engine._rebuild(cid)
        assert len(live.session.messages) == 1001

asyncio.run(main())
"""

SERVED = """
import argparse, asyncio, sys
sys.path.insert(0, {here!r})
import serve_cpu

args = argparse.Namespace(turns={n}, rounds=1, store="sqlite", inline=False, openai=False,
                          face="json", while_busy=None, calls=False)
asyncio.run(serve_cpu.rounds(serve_cpu.app(args, None), args))
"""

WIRE = """
import os, sys
sys.path.insert(0, {here!r})
from conversation import MODEL, TEMPLATE, check
from convo import OpenAIModel, Runner

runner = Runner(OpenAIModel(MODEL, base_url=os.environ["CONVO_BENCH_URL"], api_key="bench"),
                TEMPLATE)
for _ in range(20 + {n}):  # 20 to warm up: the connection, first calls
    check(runner.run())
"""

WIRE_RAW = """
import os, sys
import openai
sys.path.insert(0, {here!r})
from conversation import raw_sync

client = openai.OpenAI(base_url=os.environ["CONVO_BENCH_URL"], api_key="bench")
for _ in range(20 + {n}):
    raw_sync(client)
"""

MEASURES = {"conversation": CONVERSATION, "rebuild": REBUILD, "served": SERVED, "wire": WIRE,
            "wire-raw": WIRE_RAW}
UNITS = {"conversation": "conversation", "rebuild": "rebuild of 1,001 messages",
         "served": "served turn", "wire": "conversation over the wire",
         "wire-raw": "raw SDK conversation over the wire"}


def python_of(tree: Path, given: str | None) -> str:
    if given:
        return given
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def count(tree: Path, python: str, measure: str, n: int, keep: Path | None) -> int:
    """Instructions of one run of ``measure`` doing ``n`` units, under callgrind."""
    with tempfile.TemporaryDirectory(prefix="convo-instr-") as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(MEASURES[measure].format(here=str(HERE), n=n))
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
        env.pop("OPENAI_API_KEY", None)
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python,
                        str(script)], check=True, env=env, cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
        assert found is not None, "no summary in the callgrind output"
        if keep is not None:
            shutil.copy(out, keep)
        return int(found.group(1))


def per_unit(tree: Path, python: str, measure: str, n: int, keep: Path | None) -> float:
    return (count(tree, python, measure, 2 * n, keep) - count(tree, python, measure, n, None)) / n


def compile_tree(tree: Path, python: str) -> None:
    subprocess.run([python, "-m", "compileall", "-q", str(tree / "convo"), str(HERE)],
                   check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="another checkout to count side by side")
    parser.add_argument("--python", help="the python for this checkout")
    parser.add_argument("--before-python", help="the python for the --before checkout")
    parser.add_argument("--only", choices=sorted(MEASURES))
    parser.add_argument("--n", type=int, default=200, help="conversations in the shorter run")
    parser.add_argument("--rebuilds", type=int, default=2, help="rebuilds in the shorter run")
    parser.add_argument("--turns", type=int, default=200, help="served turns in the shorter run")
    parser.add_argument("--wire", type=int, default=100,
                        help="conversations over the wire in the shorter run")
    parser.add_argument("--keep", help="a directory to keep the longer runs' callgrind files in")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    sides = [("now", ROOT, python_of(ROOT, args.python))]
    if args.before:
        before = Path(args.before).resolve()
        sides.append(("before", before, python_of(before, args.before_python)))
    for _, tree, python in sides:
        compile_tree(tree, python)
    measures = [args.only] if args.only else list(MEASURES)
    sizes = {"conversation": args.n, "rebuild": args.rebuilds, "served": args.turns,
             "wire": args.wire, "wire-raw": args.wire}
    with ExitStack() as stack:
        if {"wire", "wire-raw"} & set(measures):
            os.environ["CONVO_BENCH_URL"] = stack.enter_context(model_server())
        for measure in measures:
            got = {}
            for side, tree, python in sides:
                file = keep / f"{side}-{measure}.out" if keep is not None else None
                got[side] = per_unit(tree, python, measure, sizes[measure], file)
            line = f"instructions per {UNITS[measure]}: now {got['now']:,.0f}"
            if "before" in got:
                line += f", before {got['before']:,.0f}: {got['now'] / got['before']:.3f}×"
            print(line, flush=True)


@contextmanager
def model_server() -> Iterator[str]:
    """The fake model server (``model_server.py``) in a process of its own; its base URL."""
    process = subprocess.Popen([sys.executable, str(HERE / "model_server.py")], cwd=HERE,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.stdin.close()
        process.wait()


if __name__ == "__main__":
    main()
