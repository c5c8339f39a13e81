"""`convo worker`'s refusals: without the temporal extra, and with a store no one else reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _convo(*argv: str, missing: bool = False) -> subprocess.CompletedProcess[str]:
    """``convo *argv`` run in a fresh process from the checkout; ``missing``: as if the
    temporal extra were not installed."""
    code = ("import sys\n" + ("sys.modules['temporalio'] = None\n" if missing else "")
            + "from convo.cli import main\n"
            f"raise SystemExit(main({list(argv)!r}))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


def _worker(*args: str, missing: bool = False) -> subprocess.CompletedProcess[str]:
    return _convo("worker", *args, missing=missing)


def test_without_the_extra_one_line_names_it() -> None:
    result = _worker("examples/refund_bot.py", missing=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        'convo worker needs temporalio, in the temporal extra: pip install -e ".[temporal]" '
        "in convo's checkout, or pip install \"convo[temporal]\" from an index that serves "
        'this convo (the "convo" on the public package index is another project)\n')


def test_a_memory_store_is_refused() -> None:
    result = _worker("examples/refund_bot.py", "--store", "memory")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("convo: error: --store memory cannot be shared with convo serve "
                             "--engine: give sqlite:///PATH or postgresql://...\n")


def _serve(*args: str, missing: bool = False) -> subprocess.CompletedProcess[str]:
    return _convo("serve", "examples/refund_bot.py", *args, missing=missing)


def test_serve_engine_refusals_are_one_line() -> None:
    missing = _serve("--engine", "temporal://127.0.0.1:7233", missing=True)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert 'pip install "convo[temporal]"' in missing.stderr
    assert missing.stderr.count("\n") == 1
    bad = _serve("--engine", "postgres://x")
    assert (bad.returncode, bad.stderr) == (
        2, "convo: error: --engine: expected temporal://HOST:PORT[/NAMESPACE], got "
           "'postgres://x'\n")
    memory = _serve("--engine", "temporal://127.0.0.1:7233", "--store", "memory")
    assert (memory.returncode, memory.stderr) == (
        2, "convo: error: --store memory cannot be shared with convo worker: give "
           "sqlite:///PATH or postgresql://...\n")


@pytest.mark.parametrize("given", ["0", "-1", "1.5", "10.5", "60", "soon", "nan", "inf", ""])
def test_a_heartbeat_timeout_must_be_from_two_to_ten_seconds(given: str) -> None:
    result = _worker("examples/refund_bot.py", "--heartbeat-timeout", given)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.endswith(
        "convo worker: error: argument --heartbeat-timeout: expected a number of seconds from "
        "2 (model and tool calls heartbeat every second) to 10 (a cut-off turn is finished "
        f"within 30 s), got {given!r}\n")


def test_the_heartbeat_timeout_is_ten_seconds_unless_given() -> None:
    from convo._temporal.bots import HEARTBEAT_S
    from convo.cli import _parser

    parse = _parser().parse_args
    assert parse(["worker", "bot.py"]).heartbeat_timeout == HEARTBEAT_S == 10.0
    assert parse(["worker", "bot.py", "--heartbeat-timeout", "2.5"]).heartbeat_timeout == 2.5
    assert parse(["worker", "bot.py", "--heartbeat-timeout", "10"]).heartbeat_timeout == 10.0
