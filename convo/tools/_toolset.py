"""Toolsets: something in a ``ToolingTemplate``'s tool list that gives tools when asked (an
``MCPServer``), and what asking it gave.

A toolset is listed at the start of each turn that has one (the ``ListTools`` request of
``convo._requests``), so a server that was down is tried again next turn; a toolset caches its
own list (an ``MCPServer`` lists once per process). Listing never raises into a run: what
failed is a ``Listed`` with an ``error`` naming the toolset and the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from .._messages import ToolCall
from ._base import Tool


@runtime_checkable
class Toolset(Protocol):
    """Gives a turn its tools: ``tools()`` blocking, ``await atools()`` on the running loop.
    ``name`` says where the tools come from (errors and clashes name it). It may also have
    ``close()`` / ``aclose()``, which ``Runner.close()`` / ``aclose()`` call."""

    @property
    def name(self) -> str: ...

    def tools(self) -> Sequence[Tool]: ...

    async def atools(self) -> Sequence[Tool]: ...


def is_toolset(candidate: object) -> bool:
    """A toolset, not a tool (a ``Tool`` is never one, whatever attributes it has)."""
    return not isinstance(candidate, Tool) and isinstance(candidate, Toolset) and \
        callable(getattr(candidate, "tools", None)) and callable(getattr(candidate, "atools", None))


@attrs.frozen(slots=True)
class Listed:
    """What listing one toolset gave: its tools, or why there are none this turn."""

    tools: tuple[Any, ...] = ()
    error: str | None = None


def _failed(toolset: Toolset, exc: Exception) -> Listed:
    return Listed(error=f"the tools of {_name(toolset)!r} could not be listed: "
                        f"{type(exc).__name__}: {exc}")


def _name(toolset: Toolset) -> str:
    try:
        return str(toolset.name)
    except Exception:  # a name that fails to say itself must not hide the real failure
        return type(toolset).__name__


def list_toolsets(toolsets: Sequence[Toolset]) -> list[Listed]:
    """Each toolset's tools, or why not (blocking; the answer to ``ListTools``)."""
    return [list_toolset(toolset) for toolset in toolsets]


async def alist_toolsets(toolsets: Sequence[Toolset]) -> list[Listed]:
    """Each toolset's tools, or why not, the toolsets listed at once."""
    if len(toolsets) == 1:
        return [await alist_toolset(toolsets[0])]
    import asyncio  # only async runs need it

    return list(await asyncio.gather(*(alist_toolset(t) for t in toolsets)))


def list_toolset(toolset: Toolset) -> Listed:
    """``toolset.tools()``, or the error (blocking)."""
    try:
        return Listed(tuple(toolset.tools()))
    except Exception as exc:
        return _failed(toolset, exc)


async def alist_toolset(toolset: Toolset) -> Listed:
    """``await toolset.atools()``, or the error."""
    try:
        return Listed(tuple(await toolset.atools()))
    except Exception as exc:
        return _failed(toolset, exc)


class Unlisted(Tool):
    """Stands in for a call of a tool the turn does not know while a toolset of the turn could
    not be listed: the tool may be one of that toolset's. A replay answers it with the call's
    saved result (a resumed or rebuilt conversation takes the path it took); live, it is not
    run nor counted (``convo._run.state``): its result is the unknown-tool error ``why``."""

    inline = True

    def __init__(self, name: str, why: str) -> None:
        super().__init__()
        self.name = name
        self.why = why

    def arguments_of(self, call: ToolCall) -> dict[str, Any]:
        return dict(call.arguments)  # not validated: nothing is run with them

    def _execute(self, args: dict[str, Any]) -> Any:
        raise RuntimeError(self.why)  # never reached: a live run is not admitted
