"""How the workflows of a bot file run in Temporal's default workflow sandbox.

Temporal imports a workflow's code again, inside its sandbox, for each workflow run: convo's
own code and the bot file's run there, so a clock, random numbers, a file or the environment
read by the pump fail the workflow task as Temporal's sandbox fails it. Only third-party
libraries that are deterministic and keep no state a workflow could see are passed through
(``PASSED_THROUGH``). The sandbox reaches the bot file through the importer, not by reading it
itself: ``register`` puts a finder on ``sys.meta_path`` that serves two modules,
``REGISTRY`` (which task queue runs which file, as data) and the bot file under a name of its
own (imported as any module is, the sandbox's restrictions applying to what it does).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import CodeType, ModuleType
from typing import Any, Final

from temporalio.worker.workflow_sandbox import SandboxRestrictions

from .bots import REGISTRY

#: Passed through the sandbox (imported once, outside it): third-party, deterministic, and
#: holding no state a workflow run could leave for another. ``attrs``/``attr``: every convo
#: value is an attrs class (its generated methods are compiled once, not per run);
#: ``jinja2`` and ``markupsafe``: the rendering of template text (a pure function of the text
#: and the session); ``typing_extensions``: typing names only.
PASSED_THROUGH: Final = ("attr", "attrs", "jinja2", "markupsafe", "typing_extensions")
#: What ``convo worker`` says of the sandbox; a bot made in this process (no file) needs
#: convo passed through, since its objects were made outside the sandbox.
DEFAULT: Final = "default"
PASSED_CONVO: Final = "default, convo passed through"
_PREFIX: Final = "_convo_temporal_bot_"


def restrictions(sandboxed: bool) -> SandboxRestrictions:
    """Temporal's defaults and ``PASSED_THROUGH``; and convo when the bot is not
    ``sandboxed`` (made in this process rather than loaded from a file)."""
    if not sandboxed:
        return SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH, "convo")
    _compile_attrs_once()
    return SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)


_compiled: dict[tuple[str, str], CodeType] = {}


def _compile_attrs_once() -> None:
    """Each workflow run imports convo again, making each of its attrs classes again: attrs
    compiles the source of their methods each time, the largest part of the import. The
    same source under the same name compiles to the same code, so each is compiled once per
    process (the methods made of it are the run's own: evaluated in the run's module).
    Where attrs keeps this step elsewhere (another version), nothing is changed."""
    make: Any = sys.modules.get("attr._make")
    step = getattr(make, "_compile_and_eval", None)
    if step is None or getattr(step, "__module__", None) == __name__:
        return

    def _compile_and_eval(script: str, globs: dict[str, Any] | None,
                          locs: Any = None, filename: str = "") -> None:
        code = _compiled.get((script, filename))
        if code is None:
            code = _compiled[script, filename] = compile(script, filename, "exec")
        eval(code, globs, locs)

    make._compile_and_eval = _compile_and_eval


class _Finder(importlib.abc.MetaPathFinder):
    """Serves ``REGISTRY`` (made afresh for each import: a sandbox gets its own copy) and
    the registered bot files, each under ``_PREFIX`` and a number."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}  # by task queue

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == REGISTRY:
            return importlib.machinery.ModuleSpec(fullname, _Registry(self.files))
        for said in self.files.values():
            if said["module"] == fullname:
                return importlib.util.spec_from_file_location(fullname, said["path"])
        return None


class _Registry(importlib.abc.Loader):
    def __init__(self, files: dict[str, dict[str, Any]]) -> None:
        self.files = files

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["FILES"] = {queue: dict(said) for queue, said in self.files.items()}


_FINDER: Final = _Finder()
_numbers: list[int] = [0]


def register(task_queue: str, path: str, name: str, **options: Any) -> Callable[[], None]:
    """Let the workflows of ``task_queue`` import the bot file at ``path`` (its template
    ``name``; ``options``: plain values the sandbox rebuilds the bot with); returns the undo."""
    _numbers[0] += 1
    said = {"module": f"{_PREFIX}{_numbers[0]}", "path": path, "name": name, **options}
    _FINDER.files[task_queue] = said
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)

    def undo() -> None:
        if _FINDER.files.get(task_queue) is said:
            del _FINDER.files[task_queue]
        if not _FINDER.files and _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)

    return undo
