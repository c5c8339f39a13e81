"""What the docs name exists: every `tests/…py::test` a page names is a test of that file, and
every dotted `convo.…` name in the docs and the README imports (a module, or a name in one)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Dotted words that are not Python names: files, state keys, loggers, extras.
NOT_NAMES = {"convo.db", "convo.transcript.jsonl", "convo.serve.log", "convo.context",
             "convo.state", "convo.internal",
             "convo.waiting", "convo.outcome", "convo.retract",
             "convo.queued"}  # (the AG-UI face's CUSTOM events)
# The span attributes of docs/telemetry.md (convo.outcome.status, ...).
ATTRIBUTES = ("convo.outcome.", "convo.approval.", "convo.state.", "convo.context.",
              "convo.limit.", "convo.guard.")


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


def _named(pattern: str) -> list[tuple[str, str]]:
    return [(f"{page.name}:{n}", match) for page in PAGES
            for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            for match in re.findall(pattern, line)]


def test_every_test_a_page_names_exists() -> None:
    named = _named(r"(tests/[\w/]+\.py)::(\w+)")
    assert len(named) > 20
    missing = []
    for where, (path, name) in named:  # type: ignore[misc]
        file = ROOT / path
        functions = {node.name for node in ast.parse(file.read_text(encoding="utf-8")).body
                     if isinstance(node, ast.FunctionDef)} if file.exists() else set()
        if name not in functions:
            missing.append(f"{where}: {path}::{name}")
    assert missing == []


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_every_dotted_convo_name_in_the_docs_imports() -> None:
    named = _named(r"`(convo(?:\.\w+)+)")
    assert len(named) > 20
    wrong = sorted({f"{where}: {name}" for where, name in named
                    if name not in NOT_NAMES and not name.startswith(ATTRIBUTES)
                    and not _resolves(name)})
    assert wrong == []
