"""The faces a served bot shows (API.md §24): which protocols answer, and their routes.

Every face is an encoder of the one stream of served events plus the routes that take its
requests: ``native`` (the JSON API, convo's SSE, the chat page and the operators' page),
``agui`` (``POST /agui``), ``ai-sdk`` (``POST /ai-sdk/chat``), ``openai`` (``/v1``) and
``mcp`` (``/mcp``). All are on unless ``faces`` chooses; a face that is off has no routes, so
its paths answer the app's JSON 404; ``/api/health`` is always served.

A face's routes are named here by module and function and imported only when the face is on,
so a face that is off costs nothing at start. The ``mcp`` face needs the mcp extra (the
``mcp`` SDK), which ``serve`` does not bring: its route imports the SDK at its first request
(``mcp.py``) and answers 501 without it; a choice that names the face is refused at start
without it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from .._problems import MCP_MISSING

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

#: Every face, in the order their routes are mounted.
FACES: Final = ("native", "agui", "ai-sdk", "openai", "mcp")

#: Where each face's routes are made: ``module:function`` taking the app's ``API``. A face
#: not named here yet is accepted and mounts nothing.
ROUTES: Final[dict[str, str]] = {
    "native": "convo.serve._http.app:native_routes",
    "agui": "convo.serve._http.agui:routes",
    "ai-sdk": "convo.serve._http.aisdk:routes",
    "mcp": "convo.serve._http.mcp:mcp_routes",
    "openai": "convo.serve._http.openai_face:routes",
}


#: The faces that need a package the serve extra does not bring: its top module, and what to
#: say without it.
NEEDS: Final[dict[str, tuple[str, str]]] = {"mcp": ("mcp", MCP_MISSING)}


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level package) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # (an import hook that refuses it)
        return False


def chosen(faces: Iterable[str] | str | None) -> tuple[str, ...]:
    """The faces to serve, in ``FACES`` order: all for ``None``; else the ones named (an
    iterable of names, or one string of them separated by commas). An unknown name is a
    ``ValueError`` naming it and the known ones; so is a face named whose package is not
    installed (``NEEDS``: all faces, the default, serve without it)."""
    if faces is None:
        return FACES
    names = faces.split(",") if isinstance(faces, str) else list(faces)
    wanted = {name.strip() for name in names if name.strip()}
    unknown = sorted(wanted - set(FACES))
    if unknown:
        raise ValueError(f"unknown face {', '.join(map(repr, unknown))}: the faces are "
                         f"{', '.join(FACES)}")
    if not wanted:
        raise ValueError(f"faces names no face: choose among {', '.join(FACES)}")
    for face in sorted(wanted):
        module, missing = NEEDS.get(face, (None, ""))
        if module is not None and not installed(module):
            raise ValueError(missing)
    return tuple(face for face in FACES if face in wanted)


def face_routes(api: Any, faces: Iterable[str]) -> list[BaseRoute]:
    """The routes of ``faces`` (already ``chosen``), each face's made by its own module."""
    routes: list[BaseRoute] = []
    for face in faces:
        where = ROUTES.get(face)
        if where is None:
            continue
        module, _, name = where.partition(":")
        make: Callable[[Any], list[BaseRoute]] = getattr(importlib.import_module(module), name)
        routes.extend(make(api))
    return routes
