"""A store failure during a turn (API.md §20): the request answers 503 and keeps what was
committed, the lease is let go, and the conversation waits for a retry — on SQLite with a full
disk (a file-size limit on the server process) and on Postgres restarted or with its backends
terminated."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

PLAIN = "The assistant could not answer. Please try again."


def test_a_full_disk_mid_turn_is_a_503_and_the_conversation_waits_for_retry(
        serve: Callable[..., Any], folder: Path) -> None:
    store = f"sqlite:///{folder / 'convo.db'}"
    full = serve(store, file_size=256 * 1024)
    cid = full.post("/api/conversations").json()["id"]
    assert full.post(f"/api/conversations/{cid}/messages", {"content": "hi"}).status_code == 200
    cut = full.post(f"/api/conversations/{cid}/messages", {"content": "big 4000"})
    assert cut.status_code == 503, cut.text
    assert "error_id" in cut.json()
    shown = full.client.get(f"/api/conversations/{cid}").json()  # same worker, at once
    assert shown["status"] == "waiting"
    assert shown["waiting_for"] == {"type": "retry", "error": PLAIN}
    assert [m["content"] for m in shown["messages"]] == [
        "Gated.", "hi", "You said 'hi'", "big 4000"]  # what was committed stays
    again = full.post(f"/api/conversations/{cid}/retry")  # not 409: the lease was let go
    assert again.status_code == 503, again.text
    refused = full.post(f"/api/conversations/{cid}/messages", {"content": "x"})
    assert refused.status_code == 409
    assert "/retry" in refused.json()["error"]
    full.stop()
    roomy = serve(store)
    retried = roomy.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text
    assert [len(m["content"]) for m in retried.json()["added"]] == [400_000]


def test_a_disk_that_stays_full_still_lets_the_turn_go(serve: Callable[..., Any],
                                                       folder: Path) -> None:
    # Small turns until the write-ahead log cannot grow: the failed turn's lease is let go
    # even so (today's code kept it for an hour: every request was 409 "a turn is running").
    store = f"sqlite:///{folder / 'convo.db'}"
    full = serve(store, file_size=160 * 1024)
    cid = full.post("/api/conversations").json()["id"]
    said = [full.post(f"/api/conversations/{cid}/messages", {"content": f"hi {i}"})
            for i in range(3)]
    while said[-1].status_code == 200 and len(said) < 200:
        said.append(full.post(f"/api/conversations/{cid}/messages", {"content": "hi"}))
    assert said[-1].status_code == 503, said[-1].text
    shown = full.client.get(f"/api/conversations/{cid}").json()
    assert shown["status"] == "waiting"
    route, body = (("retry", {}) if shown["waiting_for"]["type"] == "retry"
                   else ("messages", {"content": "hi"}))
    next_one = full.post(f"/api/conversations/{cid}/{route}", body)
    assert next_one.status_code in (200, 503), next_one.text  # never 409: nobody holds it
    full.stop()
    roomy = serve(store)
    shown = roomy.client.get(f"/api/conversations/{cid}").json()
    route, body = (("retry", {}) if shown["waiting_for"]["type"] == "retry"
                   else ("messages", {"content": "more"}))
    assert roomy.post(f"/api/conversations/{cid}/{route}", body).status_code == 200


def _pg_ctl(postgres: Any, action: str) -> None:
    ctl = [*postgres.as_user, str(postgres.bin_dir / "pg_ctl"), "-D",
           str(postgres.data / "db"), "-w"]
    options = ["-m", "fast"] if action == "stop" else [
        "-l", str(postgres.data / "log"), "-o",
        f"-p {postgres.port} -k {postgres.data} -c listen_addresses=127.0.0.1"]
    subprocess.run([*ctl, *options, action], check=True, capture_output=True)


def _admit(postgres: Any, database: str, allow: bool) -> None:
    """Let no one connect to ``database`` (and cut who is connected), or let them again."""
    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS {str(allow).lower()}")
        if not allow:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "datname = %s", (database,))


@pytest.mark.parametrize("fault", ["terminated", "restarted"])
def test_postgres_lost_mid_turn_is_a_503_and_the_conversation_waits_for_retry(
        fault: str, postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path, until: Callable[..., Any]) -> None:
    url = postgres.fresh()
    database = url.rsplit("/", 1)[1]
    worker = serve(url, "--lease", "1")
    cid = worker.post("/api/conversations").json()["id"]
    running = worker.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    if fault == "terminated":
        _admit(postgres, database, False)
    else:
        _pg_ctl(postgres, "stop")
    (folder / "gate").touch()
    cut = running.result()
    assert cut.status_code == 503, cut.text
    assert "error_id" in cut.json()
    if fault == "terminated":
        _admit(postgres, database, True)
    else:
        _pg_ctl(postgres, "start")
    shown = until(lambda: (lambda b: b if b["status"] != "running" else None)(
        worker.client.get(f"/api/conversations/{cid}").json()), "the turn to be let go")
    assert shown["status"] == "waiting"
    assert shown["waiting_for"] == {"type": "retry", "error": PLAIN}
    assert [m["content"] for m in shown["messages"]] == ["Gated.", "wait"]
    retried = worker.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text
    assert [m["content"] for m in retried.json()["added"]] == ["partial after wait"]
    assert calls() == ["model wait", "model wait"]


@pytest.mark.parametrize("where", ["same worker", "another worker"])
def test_a_retry_as_soon_as_postgres_is_back_is_served(
        where: str, postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path, until: Callable[..., Any]) -> None:
    # The turn's lease could not be released (the database was down): the worker lets it go
    # as soon as the database answers, not once the lease (120 s here) lapsed.
    url = postgres.fresh()
    worker = serve(url, "--lease", "120")
    other = serve(url, "--lease", "120") if where == "another worker" else worker
    cid = worker.post("/api/conversations").json()["id"]
    running = worker.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    _pg_ctl(postgres, "stop")
    (folder / "gate").touch()
    cut = running.result()
    assert cut.status_code == 503, cut.text
    _pg_ctl(postgres, "start")
    if other is not worker:  # the first worker's timer lets go within a second
        shown = until(lambda: (lambda b: b if b["status"] != "running" else None)(
            other.client.get(f"/api/conversations/{cid}").json()), "the lease to be let go")
        assert shown["waiting_for"] == {"type": "retry", "error": PLAIN}
    retried = other.post(f"/api/conversations/{cid}/retry")  # at once on the same worker
    assert retried.status_code == 200, retried.text
    assert [m["content"] for m in retried.json()["added"]] == ["partial after wait"]
    assert calls() == ["model wait", "model wait"]
