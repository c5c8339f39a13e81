"""convo's faces, in trio's manner (trio ``_tests/test_exports.py``; httpx
``tests/test_exported_members.py``): which modules users import names from, and that each
public name is exported once, from its home, and named after it.

A *face* is one of ``convo._faces.FACES``. Each public class, function or value of a face has
one *home*: the one face that takes it from the module it is written in; any other face that
offers it takes it from that home (``convo`` offers ``convo.templates``' ``Template``). A
class's or function's ``__module__`` is its home, so ``repr`` and pickles say ``convo.Runner``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import convo
from convo._faces import FACES

PACKAGE = Path(convo.__file__).resolve().parent
BUILT_FACES = [face for face in FACES if importlib.util.find_spec(face) is not None]

# Where API.md puts names that are not on ``convo`` itself (``convo``'s own are pinned by
# tests/docs/test_public_api.py). A name not written anywhere in convo yet is not built, and
# waits; once it is written, it must be here.
CONTRACT = {
    "convo.testing": "OpenAIServer ErrorReply SlowReply FakeMCPServer captured_spans Scenario "
                     "evaluate AnthropicServer GeminiServer temporal_server SimulatedUser "
                     "SmokeModel assert_matches_snapshot".split(),  # §7, §17, §18, §21, §23, §29
    "convo.models": "resolve register AnthropicModel Model MockModel".split(),  # §5, §23
    "convo.serve": "create_app JWT SharedToken TokenTable TrustedHeader".split(),  # §9, §19
    "convo.otel": "instrument uninstrument".split(),  # §18
    "convo.tools": ["registry"],  # §3
    "convo.events": ["MessageAdded"],  # §14
    "convo.guards": "pii max_length matches json_schema".split(),  # §27
}


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_module_of(p) for p in PACKAGE.rglob("*.py"))


def _written() -> set[str]:
    """Every name a module of convo writes at its top level (a class, a function, a value)."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _taken(face: str) -> dict[str, str]:
    """Each name of ``face``'s ``__all__`` and the module it takes it from: its lazy map, or
    the imports its ``__init__`` runs (a name written in the face itself: the face)."""
    module = importlib.import_module(face)
    lazy: dict[str, str] = getattr(module, "_LAZY", {})
    source = Path(module.__file__ or "")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    package = face if source.name == "__init__.py" else face.rpartition(".")[0]
    imported: dict[str, str] = {}
    for node in tree.body:  # (not the imports under ``if TYPE_CHECKING:``)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                imported[alias.asname or alias.name] = base
    return {name: lazy.get(name) or imported.get(name) or face for name in module.__all__}


def _is_named(value: Any) -> bool:
    return isinstance(value, type) or hasattr(value, "__code__")


def test_each_lazy_faces_all_is_its_map() -> None:
    for face in BUILT_FACES:
        module = importlib.import_module(face)
        lazy = getattr(module, "_LAZY", None)
        if lazy is None:
            continue
        assert set(lazy) <= set(module.__all__), face
        assert sorted(module.__dir__()) == sorted(module.__all__), face
        for name in module.__all__:
            assert getattr(module, name) is not None, (face, name)
    assert sorted(convo.__all__) == sorted(convo._LAZY)
    assert sorted(convo.testing.__all__) == sorted(convo.testing._LAZY)


def test_what_mypy_reads_of_convo_is_the_map() -> None:
    # mypy cannot follow the lazy map: ``if TYPE_CHECKING:`` imports the same names, each
    # as ``X as X`` (an explicit re-export, since ``__all__`` is made from the map).
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    aliases = [alias for node in block.body if isinstance(node, ast.ImportFrom)
               for alias in node.names]
    assert sorted(a.name for a in aliases) == sorted(convo._LAZY)
    assert [a.name for a in aliases if a.asname != a.name] == []


def test_every_public_name_has_exactly_one_home_face() -> None:
    homes: dict[int, list[tuple[str, str]]] = {}
    values: dict[int, Any] = {}
    for face in BUILT_FACES:
        for name, source in _taken(face).items():
            value = getattr(importlib.import_module(face), name)
            values[id(value)] = value
            if source not in FACES or source == face:  # taken from where it is written
                homes.setdefault(id(value), []).append((face, name))
            else:  # passed on: from its home face, under the same name
                assert getattr(importlib.import_module(source), name) is value, (face, name)
    for key, found in homes.items():
        if isinstance(values[key], str | int | float | bool):
            continue  # a constant's identity says nothing
        assert len(found) == 1, f"{found}: more than one face takes it from where it is written"


def test_every_class_and_function_is_named_after_its_home() -> None:
    wrong = []
    for face in BUILT_FACES:
        for name, source in _taken(face).items():
            value = getattr(importlib.import_module(face), name)
            if not _is_named(value) or not value.__module__.startswith("convo"):
                continue
            home = face if source not in FACES else source
            if value.__module__ != home:
                wrong.append(f"{face}.{name}: __module__ {value.__module__!r}, not {home!r}")
    assert wrong == []


def test_names_of_the_contract_are_exported_where_api_md_says() -> None:
    written = _written()
    missing = []
    for face, names in CONTRACT.items():
        built = [name for name in names if name in written]
        if not built or face not in BUILT_FACES:  # (a face not built yet: convo.guards)
            continue
        module = importlib.import_module(face)
        missing += [f"{face}.{name}" for name in built if name not in module.__all__]
    assert missing == []


def test_names_say_their_face_in_reprs_and_pickles() -> None:
    from convo import Approval, ModelError, RunStatus, ToolCall, Usage

    assert repr(convo.Runner) == "<class 'convo.Runner'>"
    assert repr(convo.Template) == "<class 'convo.templates.Template'>"
    assert repr(convo.TextDelta) == "<class 'convo.events.TextDelta'>"
    assert repr(ToolCall("c1", "f", {"x": 1})) == \
        "ToolCall(id='c1', name='f', arguments={'x': 1}, raw_arguments=None)"
    for value in (ToolCall("c1", "f", {"x": 1}), Usage(1, 2, 3), Approval(False, "no"),
                  RunStatus.ENDED):
        data = pickle.dumps(value)
        assert b"convo\x94" in data, data  # the class is found at convo.<name>
        assert pickle.loads(data) == value
    error = pickle.loads(pickle.dumps(ModelError("boom")))
    assert (type(error), str(error)) == (ModelError, "boom")
    assert pickle.loads(pickle.dumps(convo.tool)) is convo.tool


def test_import_convo_loads_at_most_five_of_convos_modules() -> None:
    code = "import sys, convo; print(sorted(m for m in sys.modules if m.startswith('convo')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "['convo', 'convo._faces', 'convo._version']"


# Every module of convo that is not a face has a private name (a part of its dotted name
# starts with "_"), but for these few public modules that are not faces.

PUBLIC_MODULES = {
    "convo.__main__",  # ``python -m convo``
    "convo.cli",  # ``main``, the ``convo`` command's entry point
    "convo.testing.strategies",  # hypothesis strategies (a module users import from)
}


def test_every_module_not_on_a_face_is_private() -> None:
    left = [m for m in MODULES if m not in FACES and m not in PUBLIC_MODULES
            and not any(part.startswith("_") for part in m.split("."))]
    assert left == []
