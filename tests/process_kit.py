"""Shared by the tests that start processes: what a fresh Python prints (which modules a bare
``import convo`` loads), whether a server process answers its health check, and stopping it
politely, then for sure."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any


def printed(code: str) -> str:
    """What ``python -c code`` printed in a fresh interpreter, stripped (it must exit 0)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def stop(process: subprocess.Popen[bytes] | subprocess.Popen[str], wait_s: float,
         how: signal.Signals = signal.SIGINT) -> None:
    """Ends ``process`` with ``how`` (Ctrl-C by default), killing it if it has not ended within
    ``wait_s`` seconds; nothing if it has ended already."""
    if process.poll() is not None:
        return
    process.send_signal(how)
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def answers_health(url: str, process: subprocess.Popen[Any], seconds: float = 30) -> bool:
    """Whether the server at ``url`` (ending in "/") answered ``api/health`` with 200 within
    ``seconds``; False as soon as ``process``, the server, has exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "api/health", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.05)  # polling for the server to listen, not timing the test
    return False
