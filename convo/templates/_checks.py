"""Build-time checks of a template's tool options: the tools themselves, and counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import DefinitionError, ToolDefinitionError
from ..tools._base import Tool
from ..tools._toolset import is_toolset


def check_tools(tools: Sequence[Any]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    for i, candidate in enumerate(tools):
        if not isinstance(candidate, Tool):
            if is_toolset(candidate):  # its tools are known when a turn lists them
                continue
            raise DefinitionError(
                f"ToolingTemplate: tools[{i}] is {type(candidate).__name__} {candidate!r}, "
                "expected a Tool (subclass Tool, or decorate a function with @tool) or a "
                "toolset such as an MCPServer"
            )
        candidate.schema()
        for name in (candidate.name, *candidate.aliases):
            other = by_name.setdefault(name, candidate)
            if other is not candidate:
                raise ToolDefinitionError(
                    f"ToolingTemplate: two tools are named {name!r}: {other!r} and "
                    f"{candidate!r} (tools[{i}])"
                )
    return by_name


def check_count(where: str, name: str, value: Any, least: int, *, none: str,
                hint: str = "") -> None:
    """An int >= ``least`` (or None when ``none`` says what None means), else the author's
    mistake, naming the parameter."""
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        also = f" or None ({none})" if none else ""
        raise DefinitionError(f"{where}: {name} must be an int >= {least}{hint}{also}, "
                              f"got {value!r}")
