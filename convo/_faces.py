"""The public faces, and how a face loads its names when they are first used.

A *face* is a module users import names from (``FACES``); every other module of convo is
where a name is written, not where it is found. Each public name has one *home*: the face that
takes it from the module it is written in (a face may pass on another face's name, as
``convo`` passes on ``convo.templates``' ``Template``; that face stays its home). A class or
function gets its home as its ``__module__``, so ``repr``, docs and pickling say
``convo.Runner``, not the module it happens to be written in (httpx does the same).

A lazy face is written once, as a map from each name to the module it comes from: ``lazy``
gives the face's ``__getattr__`` and ``__dir__``, and its ``__all__`` is the map's names.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

FACES: Final = ("convo", "convo.templates", "convo.tools", "convo.models", "convo.events",
                "convo.testing", "convo.serve", "convo.otel", "convo.guards")
"""The modules users import names from (docs/architecture.md)."""


def home(face: str, names: Iterable[str], namespace: Mapping[str, Any]) -> None:
    """Give each class and function of ``names`` in ``namespace`` its home, ``face``, unless
    another face is its home (it is only passed on here) or it is not convo's."""
    for name in names:
        value = namespace[name]
        module = getattr(value, "__module__", None)
        named = isinstance(value, type) or hasattr(value, "__code__")  # a class, a function
        if named and isinstance(module, str) and module.startswith("convo.") \
                and module not in FACES:
            value.__module__ = face


def lazy(face: str, where: Mapping[str, str]
         ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a face whose names (``where``: each name and
    the module it comes from) are imported when first used, and get their home (above).
    ``__dir__`` is the face's ``__all__``."""
    namespace = sys.modules[face].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        namespace[name] = getattr(importlib.import_module(module), name)
        if module not in FACES:
            home(face, (name,), namespace)
        return namespace[name]

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", where))

    return __getattr__, __dir__
