"""Shared by the command-line tests of this folder (their conftest hands on the fixtures):
`convo` run as a process with no OpenAI settings of the machine's, and the weather bot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WEATHER = str(Path(__file__).resolve().parents[1] / "cli_fixtures" / "weather.py")
TIMEOUT = 30


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment without OPENAI_API_KEY and OPENAI_BASE_URL, HOME in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(tmp_path), NO_COLOR="1", PYTHONIOENCODING="utf-8")
    return env


def convo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convo", *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
