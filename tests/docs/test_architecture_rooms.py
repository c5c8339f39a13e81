"""docs/architecture.md is a true map: every room of the package is named in it, and every
file or folder it names is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "convo"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
# Files the doc's worked examples add (they are what a contributor would write).
EXAMPLES = {"serve/_http/agui.py"}


def _rooms() -> list[str]:
    """The package's rooms: its top-level modules and packages, serve's modules and packages,
    and each provider's room of models/."""
    def of(folder: Path) -> list[str]:
        return sorted(f"{p.name}/" if p.is_dir() else p.name for p in folder.iterdir()
                      if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    return [*of(PACKAGE), *(f"serve/{name}" for name in of(PACKAGE / "serve")),
            *(f"models/{p.name}/" for p in sorted((PACKAGE / "models").iterdir())
              if (p / "__init__.py").exists())]


def test_every_room_of_the_package_is_named() -> None:
    unnamed = [room for room in _rooms() if room not in {"__init__.py"}
               and not re.search(rf"(?<![\w.]){re.escape(room)}(?![\w])", DOC)]
    assert unnamed == []


def test_every_file_and_folder_the_doc_names_is_there() -> None:
    files = set(re.findall(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|html))\b", DOC))
    folders = set(re.findall(r"(?<![\w./{}-])((?:[a-z_]+/)+)(?![\w{])", DOC))
    assert len(files) > 40 and len(folders) > 15
    tree = [p.relative_to(ROOT).as_posix() for p in ROOT.glob("**/*")
            if ".venv" not in p.parts and ".git" not in p.parts and "node_modules" not in p.parts]
    missing = [name for name in sorted(files - EXAMPLES) if not any(
        path == name or path.endswith("/" + name) for path in tree)]
    missing += [name for name in sorted(folders) if not any(
        (path + "/").endswith("/" + name) or path + "/" == name for path in tree)]
    assert missing == []
