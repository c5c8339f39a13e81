"""The conversation list (API.md §19) on a big store: a user's 50 newest conversations among
100,000 stored ones of 1,000 users, on SQLite and Postgres — the store's query alone, and the
whole ``GET /api/conversations`` in process (httpx over ASGI, a token per user). Also an
operator's first page of everybody's, and a page deep in a user's walk (by cursor).

    python benchmarks/listing.py [--conversations N] [--users N] [--postgres URL]

Without --postgres a throwaway Postgres is started with initdb/pg_ctl when its binaries are
installed (as the tests do). Target: ≤ 10 ms per list (p50). Results:
benchmarks/results/listing.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from serve_parts import postgres as start_postgres

from convo import LinearTemplate, UserTemplate
from convo.serve import TokenTable, create_app
from convo.serve._stores import Store, open_store
from convo.serve._stores.listing import Query

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "listing.json"
T0 = 1_767_225_600_000_000  # 2026-01-01, in microseconds
SPAN_US = 300 * 86400 * 1_000_000  # activity spread over 300 days
WAITING = json.dumps({"type": "user", "prompt": None})


def rows(count: int, users: int) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(7)
    for n in range(count):
        yield (f"c{n:07d}", "waiting", WAITING, f"u{rng.randrange(users)}", f"title {n}",
               T0 + rng.randrange(SPAN_US))


def fill_sqlite(path: str, count: int, users: int) -> None:
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO conversations (id, state, status, waiting_for, created, internal, "
            "owner, title, updated_at) VALUES (?, '{}', ?, ?, 0, '{}', ?, ?, ?)",
            rows(count, users))
        db.execute("ANALYZE")
    db.close()


def fill_postgres(url: str, count: int, users: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor() as cur, cur.copy(
                "COPY conversations (id, state, internal, status, waiting_for, owner, title, "
                "updated_at) FROM STDIN") as copy:
            for cid, status, waiting, owner, title, updated in rows(count, users):
                moment = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(updated // 1_000_000))
                copy.write_row((cid, "{}", "{}", status, waiting, owner, title,
                                f"{moment}.{updated % 1_000_000:06d}+00"))
        conn.execute("ANALYZE conversations")


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    await call()  # warm up
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def measure(url: str, users: int, repeat: int) -> dict[str, list[float]]:
    store: Store = open_store(url)
    table = TokenTable({f"t{u}": {"user": f"u{u}"} for u in range(users)}
                       | {"t-op": {"user": "olga", "role": "operator"}})
    app = create_app(LinearTemplate([UserTemplate()]), store=store, auth=table)
    rng = random.Random(11)
    results: dict[str, list[float]] = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://convo") as client:
        await client.get("/api/health")  # opens the store (no lifespan over ASGITransport)

        async def store_list() -> None:
            found = await store.conversations(Query(owner=f"u{rng.randrange(users)}",
                                                    limit=50))
            assert found, "a user with no conversations"

        async def route(path: str, token: str) -> None:
            response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200, response.text

        deep: dict[str, str] = {}
        first = (await client.get("/api/conversations?limit=50",
                                  headers={"Authorization": "Bearer t1"})).json()
        deep["before"] = first["next"]
        results["store: a user's 50 newest"] = await timed(store_list, repeat)
        results["GET: a user's 50 newest"] = await timed(
            lambda: route("/api/conversations", f"t{rng.randrange(users)}"), repeat)
        results["GET: a user's second page (cursor)"] = await timed(
            lambda: route(f"/api/conversations?before={deep['before']}", "t1"), repeat)
        results["GET: an operator's 50 newest of all"] = await timed(
            lambda: route("/api/conversations", "t-op"), repeat)
        await store.close()
    return results


@contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    """serve_parts' throwaway Postgres, or None where its binaries are missing."""
    if not any(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        yield None
        return
    with start_postgres() as (url, _pid):
        yield url


def schema(url: str) -> None:
    """Create the store's tables (as convo serve does on start)."""
    async def run() -> None:
        store = open_store(url)
        await store.open()
        await store.close()

    asyncio.run(run())


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": statistics.median(ordered), "p99": ordered[int(len(ordered) * 0.99) - 1],
            "min": ordered[0], "max": ordered[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    report: dict[str, Any] = {"conversations": args.conversations, "users": args.users,
                              "repeat": args.repeat, "load_before": os.getloadavg(),
                              "results": {}}
    with tempfile.TemporaryDirectory() as folder, throwaway_postgres() as started:
        stores = {"sqlite": f"sqlite:///{folder}/list.db"}
        postgres = args.postgres or started
        if postgres:
            stores["postgres"] = postgres
        for kind, url in stores.items():
            schema(url)
            began = time.perf_counter()
            (fill_sqlite(url[len("sqlite:///"):], args.conversations, args.users)
             if kind == "sqlite" else fill_postgres(url, args.conversations, args.users))
            print(f"{kind}: {args.conversations:,} conversations stored in "
                  f"{time.perf_counter() - began:.1f} s")
            measured = asyncio.run(measure(url, args.users, args.repeat))
            report["results"][kind] = {name: summary(s) for name, s in measured.items()}
    report["load_after"] = os.getloadavg()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n| list, ms: p50 (p99) | {' | '.join(report['results'])} |")
    print(f"|---|{'---|' * len(report['results'])}")
    for name in next(iter(report["results"].values())):
        cells = [f"{r[name]['p50']:.2f} ({r[name]['p99']:.2f})"
                 for r in report["results"].values()]
        print(f"| {name} | {' | '.join(cells)} |")
    print(f"\nload average before / after: {report['load_before'][0]:.2f} / "
          f"{report['load_after'][0]:.2f}")


if __name__ == "__main__":
    main()
