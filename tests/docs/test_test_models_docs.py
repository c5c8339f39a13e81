"""FunctionModel and EchoModel are documented where a reader looks for models (models.md) and
for testing (testing.md), with what a FunctionModel's function receives and a snippet that runs
(tests/docs/test_readme.py runs it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _runnable_blocks(page: Path) -> list[str]:
    """The blocks tests/docs/test_readme.py runs: fenced with exactly ```python."""
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.parametrize("page", ["models.md", "testing.md"])
def test_the_test_models_are_documented_with_a_snippet_that_runs(page: str) -> None:
    path = ROOT / "docs" / page
    assert any("FunctionModel(" in code and "EchoModel()" in code
               for code in _runnable_blocks(path))
    text = path.read_text(encoding="utf-8")
    assert "`FunctionModel(fn)`" in text and "`EchoModel()`" in text
    assert '{"type": "function", "function": {"name"' in text  # what `tools` holds
