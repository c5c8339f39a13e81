"""A throwaway PostgreSQL server for the tests that need a real one (the serving tests' stores,
the e2e workers sharing a database): made with initdb in a temporary folder outside pytest's
private ones, on a free port of 127.0.0.1, as the ``postgres`` user when the tests run as root
(the server refuses root); stopped and removed afterwards."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """The server: its URL, and ``stop``/``start`` for the tests that take it away a while."""

    def __init__(self, bin_dir: Path, data: Path, as_user: list[str], port: int) -> None:
        self.bin_dir, self.data, self.as_user, self.port = bin_dir, data, as_user, port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.databases = 0

    def ctl(self, *args: str, check: bool = True) -> None:
        subprocess.run([*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.data / "db"),
                        "-w", *args], check=check, capture_output=True)

    def start(self) -> None:
        self.ctl("-l", str(self.data / "log"), "-o",
                 f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1", "start")

    def stop(self) -> None:
        self.ctl("-m", "fast", "stop")

    def fresh(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        self.databases += 1
        name = f"t{self.databases}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + "/" + name


@contextmanager
def throwaway_postgres() -> Iterator[Postgres]:
    """A started server (the test is skipped where the server's binaries are missing)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:  # .ci/run installs it, so CI always runs these
        pytest.skip("PostgreSQL server binaries are missing: apt-get install postgresql "
                    "(.ci/run does) to run the Postgres store's tests")
    bin_dir = found[-1].parent
    data = Path(tempfile.mkdtemp(prefix="convo-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(data, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust",
                    "-U", "postgres"], check=True, capture_output=True)
    # No fsync: a commit costs a write to the page cache, not a flush to the disk (2 to 6 ms
    # each here, far more on a busy disk). The tests stop the server only with a fast shutdown,
    # which writes everything; what fsync guards, an operating system's crash, none survives.
    with open(data / "db" / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write("\nfsync = off\n")
    server = Postgres(bin_dir, data, as_user, free_port())
    server.start()
    try:
        yield server
    finally:
        server.ctl("-m", "fast", "stop", check=False)
        shutil.rmtree(data, ignore_errors=True)
