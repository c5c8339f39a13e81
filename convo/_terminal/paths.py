"""Where convo keeps its files: the chat history, the input history."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

HOME_ENV: Final = "CONVO_HOME"
HISTORY_ENV: Final = "CONVO_HISTORY"


def data_dir() -> Path:
    """``$CONVO_HOME``, else ``$XDG_DATA_HOME/convo``, else the platform's user data directory
    (``~/.local/share/convo`` on Linux)."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "convo"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "convo"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "convo"
    return Path.home() / ".local" / "share" / "convo"


def input_history_path() -> Path | None:
    """Where typed lines are kept between sessions: ``$CONVO_HISTORY`` (empty: nowhere), else
    ``input_history`` in ``data_dir()``."""
    value = os.environ.get(HISTORY_ENV)
    if value is None:
        return data_dir() / "input_history"
    return Path(value) if value else None
