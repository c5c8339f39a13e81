"""Every test that docs/runner.md's "Guarantees" section names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_guarantee_names_a_test_that_exists() -> None:
    text = (ROOT / "docs" / "runner.md").read_text(encoding="utf-8")
    section = text.split("## Guarantees", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert len(named) >= 20
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"{path}::{name} is named in docs/runner.md but missing"
