"""The tests' own house rules: tests mirror the package in folders (tests/ has no __init__.py,
so every test file's name is unique), and a folder's shared helpers are imported from its kit
module, never from `conftest` (every folder's conftest is a module named "conftest")."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_name_is_unique_and_none_is_left_at_the_top() -> None:
    files = sorted(TESTS.rglob("test_*.py"))
    twice = [name for name, n in Counter(f.name for f in files).items() if n > 1]
    assert twice == []
    assert [f.name for f in TESTS.glob("test_*.py")] == []


def test_no_test_imports_a_conftest() -> None:
    found = [f"{f.relative_to(TESTS)}:{n}" for f in sorted(TESTS.rglob("*.py"))
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if re.match(r"\s*(from conftest import|import conftest\b)", line)]
    assert found == []
