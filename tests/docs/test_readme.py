"""The Python code blocks of README.md and docs/*.md run.

Convention: a fenced block whose info string is exactly ``python`` runs; ``python no-run``
(or any other word after ``python``) is shown but not run. The runnable blocks of one file
run in order, in one namespace, so a later block may use what an earlier one defined. They
run offline (no ``OPENAI_API_KEY``), in a temporary directory, with no terminal input (a
``CLIInterface`` sees end of input, so a terminal chat ends ``stopped`` at once).
"""

from __future__ import annotations

import io
import re
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALL_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def code_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line number, info string, code)`` for every fenced block, in order."""
    blocks: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence)
                                      and not lines[j].strip()[len(fence):].strip()):
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append((i + 1, opening["info"].strip(), "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def runnable(blocks: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    return [(line, code) for line, info, code in blocks if info == "python"]


# Pages with runnable blocks (cli.md and performance.md show commands, not Python).
DOCS = [p for p in ALL_DOCS if runnable(code_blocks(p.read_text(encoding="utf-8")))]


def test_block_parsing_follows_the_convention() -> None:
    text = (
        "intro\n```python\nx = 1\n```\n"
        "```python no-run\ninput()\n```\n"
        "```bash\nls\n```\n"
        "- item\n\n  ```python\n  y = x + 1\n  ```\n"
    )
    assert runnable(code_blocks(text)) == [(2, "x = 1\n"), (13, "y = x + 1\n")]


def test_docs_exist() -> None:
    names = {p.name for p in ALL_DOCS}
    assert {"README.md", "quickstart.md", "templates.md", "tools.md", "termination.md",
            "runner.md", "models.md", "cli.md", "testing.md", "performance.md",
            "states.md"} <= names


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_code_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = runnable(code_blocks(path.read_text(encoding="utf-8")))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    namespace: dict[str, object] = {"__name__": f"doc_{path.stem}"}
    for line, code in blocks:
        where = f"{path.relative_to(ROOT)}, block at line {line}"
        try:
            exec(compile(code, where, "exec"), namespace)
        except (Exception, SystemExit):
            pytest.fail(f"{where} failed:\n{traceback.format_exc()}", pytrace=False)
