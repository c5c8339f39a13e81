"""docs/architecture.md's layers hold: no import circle anywhere in convo (type-only imports
under ``TYPE_CHECKING`` included), and no module of the lower layers (values, the world's
shapes, the language, running) imports one of a higher layer, even lazily inside a function.
The layers are the diagram's; the faces' loader (``_faces.py``) is how a face loads, used by
every face whatever its layer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "convo"

# The first part of a module's name under convo/, and its layer (the diagram's).
LAYERS = {
    **dict.fromkeys(("messages", "parts", "reply", "session", "events", "errors", "approval",
                     "limits", "version", "internal", "jsonvalues"), 0),
    **dict.fromkeys(("models", "tools", "guards", "interfaces", "rendering", "context"), 1),
    **dict.fromkeys(("templates", "requests"), 2),
    **dict.fromkeys(("runner", "run", "resume", "record", "summary", "appending",
                     "transcript"), 3),
    **dict.fromkeys(("terminal", "serve", "testing", "botfile", "otel", "temporal"), 4),
    **dict.fromkeys(("cli", "__main__", "__init__"), 5),
}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path) -> set[str]:
    """The convo modules ``name`` imports, wherever the import is written."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            named = {f"{module}.{a.name}" for a in node.names} & MODULES.keys()
            # ``from . import reply`` imports the module; ``from .x import y``, x's name y
            found |= (named if named and not node.module else {module, *named}) & \
                MODULES.keys() - {name}
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> int | None:
    """Its layer, by its first part under convo/ (a private name, ``_x``, is x's room)."""
    parts = name.split(".")
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS.get(parts[1] if parts[1].startswith("__") else parts[1].lstrip("_"))


def test_every_room_has_a_layer() -> None:
    assert [m for m in MODULES if _layer(m) is None and m != "convo._faces"] == []


def test_no_import_circle() -> None:
    circles: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            circles.append(" -> ".join((*path[path.index(name):], name)))
            return
        if name in done:
            return
        for imported in sorted(GRAPH[name]):
            if not imported.startswith(name + "."):  # a package importing its own modules
                visit(imported, (*path, name))
        done.add(name)

    for name in sorted(GRAPH):
        visit(name, ())
    assert circles == []


def test_no_import_runs_back_up_from_the_lower_layers() -> None:
    up = sorted(f"{name} -> {imported}" for name, imported_ in GRAPH.items()
                for imported in imported_
                if (low := _layer(name)) is not None and low <= 3 and imported != "convo._faces"
                and (high := _layer(imported)) is not None and high > low)
    assert up == []


def test_serving_never_imports_the_engine_built_on_it() -> None:
    """``convo._temporal`` builds on ``convo.serve``'s engine; serving takes an engine from its
    caller (``create_app(engine=)``) and never imports it back: ``convo serve --engine
    temporal://…`` builds it in the command line."""
    back = sorted(f"{name} -> {imported}" for name, imported_ in GRAPH.items()
                  if name == "convo.serve" or name.startswith("convo.serve.")
                  for imported in imported_ if imported.startswith("convo._temporal"))
    assert back == []
