"""The processes of the serving benchmark (``serve.py``): the fake model servers, `convo
serve`, the floor, a throwaway Postgres (initdb/pg_ctl), the load generator, and the CPU time
each process spent."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


STACKS = HERE / "results" / "stacks"
"""Where the processes write their stacks when a turn stalls (``sitecustomize.py``)."""
STARTED: list[int] = []  # the pids of the processes started here, for dump_stacks


def traced(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process that dumps its stacks on SIGUSR1 (this folder's sitecustomize)."""
    STACKS.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "CONVO_BENCH_STACKS": str(STACKS)}


def dump_stacks() -> str:
    """SIGUSR1 to every process started here and its children: each writes its threads' and
    asyncio tasks' stacks to a file in STACKS. Says where they are."""
    pids = list(STARTED)
    while pids:
        pid = pids.pop()
        try:
            os.kill(pid, signal.SIGUSR1)
            for task in Path(f"/proc/{pid}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            pass
    return f"stacks in {STACKS}"


class Process:
    def __init__(self, args: list[str], env: dict[str, str], port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.p = subprocess.Popen(args, env=traced(env), cwd=HERE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        STARTED.append(self.p.pid)
        for _ in range(300):
            try:
                if httpx.post(f"{self.url}/api/conversations", json={}, timeout=1).status_code \
                        == 201:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{args} did not start")

    def stop(self) -> None:
        STARTED.remove(self.p.pid)
        self.p.terminate()
        self.p.wait()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process and its live children, from /proc (Linux); a
    figure the other processes on the machine disturb far less than latency."""
    try:
        pids, total = [pid], 0.0
        while pids:
            p = pids.pop()
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{p}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        return total
    except (OSError, ValueError):
        return None


class Fake:
    """One fake OpenAI server process (``model_server.py``)."""

    def __init__(self) -> None:
        self.p = subprocess.Popen([sys.executable, str(HERE / "model_server.py")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  cwd=HERE, env=traced(dict(os.environ)))
        STARTED.append(self.p.pid)
        assert self.p.stdout is not None
        self.base_url = self.p.stdout.readline().strip()

    def stop(self) -> None:
        assert self.p.stdin is not None
        STARTED.remove(self.p.pid)
        self.p.stdin.close()
        self.p.wait()


def convo_serve(base_url: str, store: str, workers: int = 1, bot: str = "") -> Process:
    """``bot``: which template of serve_bot.py (``:inline_template``; default ``template``)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    env.pop("OPENAI_API_KEY", None)
    return Process([sys.executable, "-m", "convo", "serve", f"{HERE / 'serve_bot.py'}{bot}",
                    "--port", str(port), "--store", store, "--workers", str(workers),
                    "--base-url", base_url, "--model", "bench-model", "--no-stream"], env, port)


def floor(base_url: str) -> Process:
    port = free_port()
    env = {**os.environ, "FLOOR_BASE_URL": base_url, "PYTHONPATH": str(HERE)}
    return Process([sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(port),
                    "--log-level", "warning"], env, port)


@contextmanager
def postgres() -> Iterator[tuple[str, int]]:
    """A throwaway Postgres server: its URL and its postmaster's pid."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        raise SystemExit("--postgres auto needs the PostgreSQL server binaries")
    bin_dir, data = found[-1].parent, Path(tempfile.mkdtemp(prefix="convo-bench-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(data, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust",
                    "-U", "postgres"], check=True, capture_output=True)
    ctl = [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-w"]
    subprocess.run([*ctl, "-l", str(data / "log"), "-o", f"-p {port} -k {data} -c "
                    "listen_addresses=127.0.0.1 -c max_connections=200", "start"],
                   check=True, capture_output=True)
    try:
        pid = int((data / "db" / "postmaster.pid").read_text().split()[0])
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", pid
    finally:
        subprocess.run([*ctl, "-m", "fast", "stop"], check=False, capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


async def load(urls: list[str], conversations: int, turns: int,
               one_by_one: int = 1) -> dict[str, float]:
    """Each conversation sends ``turns`` messages in a row; ``conversations`` run at once,
    conversation i on ``urls[i % len(urls)]``, ``one_by_one`` times over."""
    latencies: list[float] = []
    failed: list[str] = []  # a turn that got no answer within a minute, or not a 200
    limits = httpx.Limits(max_connections=conversations + 10)
    clients = [httpx.AsyncClient(base_url=url, timeout=60, limits=limits) for url in urls]

    async def post(client: httpx.AsyncClient, path: str, body: Any) -> tuple[Any, float]:
        for attempt in range(5):
            started = time.perf_counter()
            try:
                return await client.post(path, json=body), started
            except (httpx.ReadError, httpx.RemoteProtocolError):
                # the server closed an idle keep-alive connection as it was reused: the
                # request never reached it, so it is sent again (and timed from there)
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    async def one(client: httpx.AsyncClient) -> None:
        try:
            cid = (await post(client, "/api/conversations", {}))[0].json()["id"]
            for i in range(turns):
                body = {"content": f"What is the weather in Oslo? ({i})"}
                r, started = await post(client, f"/api/conversations/{cid}/messages", body)
                if r.status_code != 200:
                    failed.append(f"{r.status_code}: {r.text[:200]}")
                    return
                latencies.append(time.perf_counter() - started)
        except httpx.TimeoutException:
            failed.append("no answer within 60 s")
            if len(failed) == 1:  # the first stall: what every process awaits, for diagnosis
                print(f"a turn stalled: {dump_stacks()}", flush=True)

    started = time.perf_counter()
    for _ in range(one_by_one):
        await asyncio.gather(*(one(clients[i % len(clients)]) for i in range(conversations)))
    elapsed = time.perf_counter() - started
    for client in clients:
        await client.aclose()
    latencies.sort()
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "turns": len(latencies), "turns_per_s": len(latencies) / elapsed,
            "failed": failed}
