"""Appending to a JSON-lines file safely: one writer at a time, and no half-written line.

A writer locks its file (``flock``, exclusive, not waiting) for as long as it has it open, so
that two runs never interleave their lines in one transcript; before appending, a last line
that a killed writer left unfinished is dropped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from ._errors import TranscriptError


def locked(file: IO[str], path: str | os.PathLike[str]) -> IO[str]:
    """``file``, locked for this writer alone (refused while another writer holds it)."""
    try:
        import fcntl
    except ImportError:  # no flock here (Windows): the size check on append still holds
        return file
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        file.close()
        raise TranscriptError(f"{path} is being written by another run: let that run end "
                              "first, or save this one to another file") from None
    return file


def drop_cut_off_line(path: Path) -> None:
    """Remove a last line that a killed writer left unfinished, so that appending is safe; a
    complete last line without its newline (read as a line) gets the newline instead."""
    with open(path, "rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            start = data.rfind(b"\n") + 1
            try:
                complete = isinstance(json.loads(data[start:]), dict)
            except (ValueError, RecursionError):
                complete = False
            if complete:
                file.write(b"\n")
            else:
                file.truncate(start)
