"""Transcript snapshots: a conversation compared with a readable text file kept with the tests.

::

    assert_matches_snapshot(session, "barista/orders_a_latte")
    # compares with tests/snapshots/barista/orders_a_latte.txt

A snapshot holds each message's role and content, the tool calls (numbered in order, so
provider ids never show) and the outcome. Normalisers replace what changes from run to run
before the comparison: UUIDs and ISO-8601 timestamps by default, and any pattern the test
names (``normalize={"order": r"ORD-\\d+"}`` writes ``<order>``). A mismatch fails with a
unified diff of the two conversations; ``pytest --convo-update-snapshots`` (or
``CONVO_UPDATE_SNAPSHOTS=1``) writes the files instead. In pytest, the directory is
``tests/snapshots`` under the rootdir (the ``convo_snapshot_dir`` ini option changes it).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final, TypeAlias

import attrs

from .._messages import Message
from .._parts import shown
from .._session import Session

Normalizer: TypeAlias = "Callable[[str], str] | tuple[str | re.Pattern[str], str]"
Normalizers: TypeAlias = "Mapping[str, str | re.Pattern[str]] | Iterable[Normalizer] | None"

UUID: Final = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
                         re.IGNORECASE)
TIMESTAMP: Final = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b")
DEFAULT_NORMALIZERS: Final[tuple[Normalizer, ...]] = ((UUID, "<uuid>"),
                                                       (TIMESTAMP, "<timestamp>"))
_NAME: Final = re.compile(r"[\w.-]+(?:/[\w.-]+)*")
UPDATE_HINT: Final = "run pytest --convo-update-snapshots to accept this run's conversation"


@attrs.define
class SnapshotSettings:
    """Where snapshots live and whether this run rewrites them, outside pytest."""

    directory: Path = attrs.field(factory=lambda: Path("tests") / "snapshots")
    update: bool = False
    written: list[Path] = attrs.field(factory=list)


def current_settings() -> SnapshotSettings:
    """The running pytest's settings (from the convo plugin), else ``tests/snapshots`` under
    the working directory."""
    plugin = sys.modules.get("convo.testing._plugin")
    stack = getattr(plugin, "SNAPSHOTS", None)
    if stack:
        settings: SnapshotSettings = stack[-1]  # the plugin's own class, with the same fields
        return settings
    return SnapshotSettings()


def _env_update() -> bool:
    return os.environ.get("CONVO_UPDATE_SNAPSHOTS", "") not in ("", "0")


# -- the text ----------------------------------------------------------------------------------

def render(session: Session | Iterable[Message]) -> str:
    """The conversation as snapshot text (before normalisation)."""
    messages = session.messages if isinstance(session, Session) else list(session)
    numbers: dict[str, int] = {}
    lines: list[str] = []
    for message in messages:
        lines.extend(_message_lines(message, numbers))
    outcome = session.outcome if isinstance(session, Session) else None
    if outcome is not None:
        end = f"outcome: {outcome.status.value}"
        if outcome.farewell is not None:
            end += f", farewell {outcome.farewell!r}"
        if outcome.error is not None:
            end += f", error {outcome.error!r}"
        lines += ["", end]
    return "\n".join(lines) + "\n"


def _message_lines(message: Message, numbers: dict[str, int]) -> list[str]:
    head = f"{message.role}:"
    if message.role == "tool":
        number = numbers.get(message.tool_call_id or "")
        ref = f"call {number}" if number is not None else f"id {message.tool_call_id}"
        head = f"tool ({ref}{', ' + message.name if message.name else ''}):"
    text = shown(message.content).split("\n")
    lines = [f"{head} {text[0]}".rstrip()]
    lines += [f"  | {line}".rstrip() for line in text[1:]]
    for call in message.tool_calls:
        numbers.setdefault(call.id, len(numbers) + 1)
        lines.append(f"  -> call {numbers[call.id]}: {call.name}({call.arguments_json()})")
    return lines


def normalizers(normalize: Normalizers, defaults: bool = True) -> list[Callable[[str], str]]:
    """The normalisers as functions: the defaults, then the test's own."""
    given: list[Normalizer] = list(DEFAULT_NORMALIZERS) if defaults else []
    if isinstance(normalize, Mapping):
        given += [(pattern, f"<{name}>") for name, pattern in normalize.items()]
    elif normalize is not None:
        given += list(normalize)
    out: list[Callable[[str], str]] = []
    for item in given:
        if callable(item):
            out.append(item)
            continue
        pattern, replacement = item
        compiled = re.compile(pattern)
        out.append(lambda text, p=compiled, r=replacement: p.sub(r, text))  # type: ignore[misc]
    return out


def snapshot_text(session: Session | Iterable[Message], name: str,
                  normalize: Normalizers = None, *, defaults: bool = True) -> str:
    """What the snapshot file for this conversation holds."""
    text = render(session)
    for fn in normalizers(normalize, defaults):
        text = fn(text)
    return (f"# convo conversation snapshot: {name}\n"
            f"# pytest --convo-update-snapshots rewrites this file\n\n{text}")


# -- the assertion -----------------------------------------------------------------------------

def snapshot_path(name: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """The file of the snapshot ``name`` (``a/b`` is ``<directory>/a/b.txt``)."""
    if not _NAME.fullmatch(name) or ".." in name.split("/"):
        raise ValueError(f"snapshot name {name!r}: use letters, digits, '_', '-' and '.', "
                         "with '/' between folders")
    base = Path(directory) if directory is not None else current_settings().directory
    return base / f"{name}.txt"


def assert_matches_snapshot(
    session: Session | Iterable[Message], name: str, *, normalize: Normalizers = None,
    defaults: bool = True, directory: str | os.PathLike[str] | None = None,
    update: bool | None = None,
) -> None:
    """The conversation matches the snapshot ``name``; with ``update`` it is (re)written.

    ``normalize``: ``{"name": pattern}`` (each match becomes ``<name>``), or a list of
    ``(pattern, replacement)`` pairs and functions ``str -> str``; ``defaults=False`` drops
    the UUID and timestamp normalisers.
    """
    __tracebackhide__ = True
    settings = current_settings()
    path = snapshot_path(name, directory)
    text = snapshot_text(session, name, normalize, defaults=defaults)
    if (settings.update or _env_update()) if update is None else update:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if update is None:  # listed at the end of the pytest run
                settings.written.append(path)
        return
    shown = _shown(path)
    if not path.exists():
        raise AssertionError(f"there is no snapshot {shown} yet: {UPDATE_HINT} (it writes "
                             f"the file). This run's conversation:\n{text}")
    old = path.read_text(encoding="utf-8")
    if old == text:
        return
    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), f"snapshot {shown}",
                                "this run", lineterm="")
    raise AssertionError(f"the conversation differs from the snapshot {shown} "
                         f"(- snapshot, + this run):\n" + "\n".join(diff)
                         + f"\n{UPDATE_HINT}")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
