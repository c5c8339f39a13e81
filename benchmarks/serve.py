"""Served turns: ``convo serve`` on SQLite against the floor (a bare Starlette endpoint on the
raw SDK, history in a dict) at 1, 50 and 200 concurrent conversations; turns per second of two
``convo serve`` workers on Postgres against one; what the store is asked per turn (lease
renewals included); and the time to rebuild a paused conversation of 10, 100 and 1,000
messages.

    python benchmarks/serve.py [--quick] [--postgres auto|postgresql://...] [--only NAME]

Every process runs on this machine (servers, fake model servers, Postgres, load generator):
the numbers compare convo with the floor under the same conditions; they are not capacity
figures. The floor and convo (its tool in a thread, as any plain function tool; and
``inline``, on the loop as the floor runs it) take turns, round by round, in ABC CBA order,
each with a fake model server of its own; a round's ratio is convo's p50 over the floor's p50
of the same round. Besides latency, each row has the server's CPU time per served turn (Linux, from
/proc): on a shared machine it is the steadier figure. Results:
benchmarks/results/serve.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from serve_parts import Fake, Process, convo_serve, cpu_seconds, floor, load, postgres

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "serve.json"
TURNS = 5  # messages each conversation sends, one after another


def timed(server: Process, urls: list[str], level: int, one_by_one: int) -> dict[str, Any]:
    before = cpu_seconds(server.p.pid)
    row = asyncio.run(load(urls, level, TURNS, one_by_one))
    after = cpu_seconds(server.p.pid)
    if before is not None and after is not None:
        row["server_cpu_ms_per_turn"] = 1000 * (after - before) / row["turns"]
    return row


CONVO = ("convo/sqlite", "convo/sqlite, inline tool")


def latency(levels: dict[int, int], folder: str) -> dict[str, Any]:
    """p50 of convo serve on SQLite (its tool in a thread, as any plain function tool; and
    marked ``inline``, run on the loop as the floor runs it) against the floor's, in ABC CBA
    rounds at each level."""
    out: dict[str, Any] = {}
    with ExitStack() as stack:
        fakes = [Fake(), Fake(), Fake()]
        for fake in fakes:
            stack.callback(fake.stop)
        servers = {"floor": floor(fakes[0].base_url),
                   CONVO[0]: convo_serve(fakes[1].base_url, f"sqlite:///{folder}/a.db"),
                   CONVO[1]: convo_serve(fakes[2].base_url, f"sqlite:///{folder}/b.db",
                                         bot=":inline_template")}
        for server in servers.values():
            stack.callback(server.stop)
        for level, rounds in levels.items():
            one_by_one = 10 if level == 1 else 1  # 50 turns a round at 1 at once
            rows: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
            for r in range(rounds):
                for name in list(servers) if r % 2 == 0 else list(servers)[::-1]:
                    server = servers[name]
                    rows[name].append(timed(server, [server.url], level, one_by_one))
                    row = rows[name][-1]
                    print(f"{name:14} {level:4} at once, round {r + 1}: p50 "
                          f"{row['p50_ms']:8.2f} ms  p99 {row['p99_ms']:8.2f} ms  "
                          f"{row['turns_per_s']:6.1f} turns/s  server CPU "
                          f"{row.get('server_cpu_ms_per_turn', 0):5.2f} ms/turn", flush=True)
            out[str(level)] = {name: summary(rs) for name, rs in rows.items()}
            for name in CONVO:
                ratios = [c["p50_ms"] / f["p50_ms"]
                          for c, f in zip(rows[name], rows["floor"], strict=True)]
                out[str(level)][name] |= {"ratio_median": statistics.median(ratios),
                                          "ratios": ratios}
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ["p50_ms", "p99_ms", "turns_per_s", "server_cpu_ms_per_turn"]
    return {k: statistics.median(r[k] for r in rows if k in r) for k in keys} | {"rounds": rows}


def scaling(url: str, pg_pid: int, levels: dict[int, int]) -> dict[str, Any]:
    """Turns/s of two convo serve workers (processes on one Postgres, each with a fake model
    server of its own, conversations spread over them) against one; CPU per turn of each
    kind of process, to see what is the bottleneck."""
    out: dict[str, Any] = {}
    with ExitStack() as stack:
        fakes = [Fake(), Fake()]
        for fake in fakes:
            stack.callback(fake.stop)
        workers = [convo_serve(fake.base_url, url) for fake in fakes]
        for worker in workers:
            stack.callback(worker.stop)
        setups = {"1 worker": workers[:1], "2 workers": workers}
        for level, rounds in levels.items():
            rows: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
            for r in range(rounds):
                for name in (list(setups) if r % 2 == 0 else list(setups)[::-1]):
                    rows[name].append(run_on(setups[name], fakes, pg_pid, level))
                    row = rows[name][-1]
                    print(f"postgres, {name:9} {level:4} at once, round {r + 1}: "
                          f"{row['turns_per_s']:6.1f} turns/s  p50 {row['p50_ms']:8.2f} ms  "
                          f"CPU ms/turn: {row['cpu_ms_per_turn']}", flush=True)
            ratios = [b["turns_per_s"] / a["turns_per_s"]
                      for a, b in zip(rows["1 worker"], rows["2 workers"], strict=True)]
            out[str(level)] = {name: rs for name, rs in rows.items()}
            out[str(level)]["ratio_median"] = statistics.median(ratios)
            out[str(level)]["ratios"] = ratios
    return out


def run_on(workers: list[Process], fakes: list[Fake], pg_pid: int, level: int
           ) -> dict[str, Any]:
    groups = {"convo": [w.p.pid for w in workers], "fake model": [f.p.pid for f in fakes],
              "postgres": [pg_pid]}
    before = {k: sum(cpu_seconds(p) or 0 for p in pids) for k, pids in groups.items()}
    own = time.process_time()
    row = asyncio.run(load([w.url for w in workers], level, TURNS))
    used = {k: sum(cpu_seconds(p) or 0 for p in pids) - before[k] for k, pids in groups.items()}
    used["load generator"] = time.process_time() - own
    row["cpu_ms_per_turn"] = {k: round(1000 * v / row["turns"], 2) for k, v in used.items()}
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", help="'auto' (a throwaway server from initdb) or a URL")
    parser.add_argument("--only", help="latency, scaling, store or rebuild")
    args = parser.parse_args()
    wanted = {args.only} if args.only else {"latency", "scaling", "store", "rebuild"}
    results: dict[str, Any] = {"turns_per_conversation": TURNS, "load_before": os.getloadavg()}
    if "latency" in wanted:
        levels = {1: 2, 50: 2} if args.quick else {1: 6, 50: 6, 200: 2}
        results["latency"] = latency(levels, tempfile.mkdtemp(prefix="convo-bench-"))
    if "scaling" in wanted and args.postgres:
        levels = {50: 2} if args.quick else {50: 4, 200: 2}
        if args.postgres == "auto":
            with postgres() as (url, pid):
                results["scaling"] = scaling(url, pid, levels)
        else:
            results["scaling"] = scaling(args.postgres, 0, levels)
    if "store" in wanted:
        from serve_store import store_calls

        results["store_calls"] = store_calls()
    if "rebuild" in wanted:
        from serve_store import rebuild_times

        results["rebuild"] = rebuild_times([10, 100] if args.quick else [10, 100, 1000])
    results["load_after"] = os.getloadavg()
    report(results)
    if not args.only:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")


def report(results: dict[str, Any]) -> None:
    for level, row in results.get("latency", {}).items():
        f = row["floor"]
        print(f"{level:>4} at once: floor p50 {f['p50_ms']:.1f} ms, server CPU "
              f"{f['server_cpu_ms_per_turn']:.2f} ms/turn")
        for name in CONVO:
            c = row[name]
            print(f"      {name}: p50 {c['p50_ms']:.1f} ms, ratio (median of rounds) "
                  f"{c['ratio_median']:.3f} [{', '.join(f'{r:.2f}' for r in c['ratios'])}]; "
                  f"server CPU {c['server_cpu_ms_per_turn']:.2f} ms/turn")
    for level, row in results.get("scaling", {}).items():
        one = statistics.median(r["turns_per_s"] for r in row["1 worker"])
        two = statistics.median(r["turns_per_s"] for r in row["2 workers"])
        print(f"postgres {level:>4} at once: 1 worker {one:.1f} turns/s, 2 workers {two:.1f} "
              f"turns/s, ratio (median of rounds) {row['ratio_median']:.2f}")
    for name, row in results.get("store_calls", {}).items():
        print(f"store calls per turn, {name}: {row}")
    for row in results.get("rebuild", {}).values():
        print(f"rebuild {row['messages']:5} messages: read {row['read_ms']:.3f} ms, rebuild "
              f"{row['rebuild_ms']:.3f} ms, beyond reading {row['beyond_read_ms']:.3f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
