"""A SQLite store convo serve cannot write (a read-only file, or a read-only folder for a new
one): ``convo serve`` says so at start, naming the file and what to do, and exits 2, instead
of answering every request with a 503."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from serve_kit import ROOT, free_port

BOT = str(ROOT / "tests" / "serve_fixtures" / "faults_bot.py")
HOW = ("convo serve writes every turn to it: make it writable, or choose another --store")


def _serve(store: Path) -> subprocess.CompletedProcess[str]:
    # root writes any file: without these capabilities, it is held to the modes as anyone
    as_anyone: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root needs setpriv to drop its override of file modes")
        as_anyone = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    return subprocess.run([*as_anyone, sys.executable, "-m", "convo", "serve", BOT,
                           "--port", str(free_port()), "--store", f"sqlite:///{store}"],
                          capture_output=True, text=True, timeout=60)


def test_a_read_only_file_is_said_at_start(tmp_path: Path) -> None:
    path = tmp_path / "convo.db"
    sqlite3.connect(path).close()
    path.chmod(0o444)
    done = _serve(path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"convo: error: SQLite store {path} cannot be written: the file is read-only for "
        f"this process; {HOW} (attempt to write a readonly database)")


def test_a_new_file_in_a_read_only_folder_is_said_at_start(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        done = _serve(folder / "convo.db")
    finally:
        folder.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"convo: error: SQLite store {folder / 'convo.db'} cannot be written: its folder "
        f"{folder} is read-only for this process (SQLite writes the file and its -wal and "
        f"-shm files there); {HOW} (unable to open database file)")
