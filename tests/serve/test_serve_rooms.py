"""serve/ in rooms (docs/architecture.md, "Serving in rooms"): ``http/`` on top, the engine in
the middle, ``stores/`` and the served events below; imports run one way, and no chain of
imports among serve's modules (the package faces included) is more than five modules long,
counting the imports that run (a type-only import under ``TYPE_CHECKING`` runs none)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SERVE = Path(__file__).resolve().parents[2] / "convo" / "serve"


def _name(path: Path) -> str:
    parts = path.relative_to(SERVE).with_suffix("").parts
    return ".".join(("convo", "serve", *(parts[:-1] if parts[-1] == "__init__" else parts)))


MODULES = {_name(p): p for p in SERVE.rglob("*.py")}


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package.split(".")[:len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
        found |= {m for m in [module] + [f"{module}.{a.name}" for a in node.names]
                  if m in MODULES and m != name}
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


@functools.cache
def _floors(name: str, below: tuple[str, ...] = ()) -> int:
    """How many modules the longest chain of imports from ``name`` holds (``name`` too)."""
    assert name not in below, f"an import circle: {' -> '.join((*below, name))}"
    return 1 + max((_floors(m, (*below, name)) for m in sorted(GRAPH[name])), default=0)


def test_no_chain_of_imports_in_serve_is_over_five_modules() -> None:
    tallest = max(GRAPH, key=_floors)
    assert _floors(tallest) <= 5, (tallest, _floors(tallest))


def test_imports_run_one_way_between_the_rooms() -> None:
    def room(name: str) -> str:
        rest = name.split(".")[2:]
        return rest[0] if rest and rest[0] in ("http", "stores") else "engine"

    for name, imported in GRAPH.items():
        if name == "convo.serve":  # the face imports every room
            continue
        below = {room(m) for m in imported}
        if room(name) == "stores":
            assert below <= {"stores", "engine"} and all(
                room(m) == "stores" or m == "convo.serve._problems" for m in imported), name
        elif room(name) == "engine":
            assert "http" not in below, name
