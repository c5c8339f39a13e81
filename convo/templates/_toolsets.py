"""The tools of one turn of a ``ToolingTemplate``: its own, and those its toolsets list.

A tool list with toolsets in it (an ``MCPServer``) is listed at the start of each turn: the
turn yields ``ListTools`` and merges what came with the template's own tools, in the list's
order (the final-output tool last). A name given twice is the author's mistake, raised before
any model call and naming both sources — unless the toolset listed that tool only after its
first listing (an MCP server's ``tools/list_changed``, mid-conversation): such a tool is left
out of the turn and a warning names it; a toolset that could not be listed leaves the turn
without its tools (it is listed again next turn). A call of a tool the turn does not know is
then an ``Unlisted`` stand-in rather than an error at once: a replay answers it with the call's
saved result (so a conversation resumed or rebuilt while a server is down takes the path it
took), and live it is the unknown-tool error, naming the toolsets that could not be listed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from .._errors import DefinitionError, ToolDefinitionError
from .._messages import ToolCall
from .._requests import Flow, ListTools
from ..tools._base import Tool
from ..tools._frontend import FrontendTool
from ..tools._output import OUTPUT_TOOL
from ..tools._toolset import Listed, Toolset, Unlisted, is_toolset

logger = logging.getLogger("convo")


@attrs.frozen(slots=True)
class TurnTools:
    """What one turn may call: by name (aliases too), the schemas the model is sent, the names
    an unknown-tool error lists, and why each toolset that could not be listed is missing."""

    by_name: Mapping[str, Tool]
    schemas: tuple[Mapping[str, Any], ...]
    names: tuple[str, ...]
    unlisted: tuple[str, ...] = ()
    listed: bool = False  # the turn has toolsets: an unknown call is a stand-in

    def unknown(self, name: str) -> str:
        """The unknown-tool error of a call of ``name``."""
        return "; ".join((f"there is no tool named {name!r}; available tools: "
                          f"{', '.join(self.names) or 'none'}", *self.unlisted))

    def stand_in(self, call: ToolCall) -> Unlisted | None:
        return Unlisted(call.name, self.unknown(call.name)) if self.listed else None


def with_frontend(tools: TurnTools, frontend: Sequence[FrontendTool]) -> TurnTools:
    """``tools`` and the tools a front end offers (``convo.tools._frontend``); a name the turn
    has already is the bot's, and the front end's tool of that name is left out."""
    fresh = [t for t in frontend if t.name not in tools.by_name]
    if not fresh:
        return tools
    return attrs.evolve(tools, by_name={**tools.by_name, **{t.name: t for t in fresh}},
                        schemas=(*tools.schemas, *(t.schema() for t in fresh)),
                        names=(*tools.names, *(t.name for t in fresh)))


def toolsets_of(items: Sequence[Any]) -> tuple[Toolset, ...]:
    return tuple(item for item in items if is_toolset(item))


def fixed(by_name: Mapping[str, Tool], schemas: tuple[Mapping[str, Any], ...],
          items: Sequence[Any], output: bool) -> TurnTools:
    """The tools of every turn of a template without toolsets, built once."""
    names = tuple(t.name for t in items if isinstance(t, Tool)) + ((OUTPUT_TOOL,) * output)
    return TurnTools(by_name, schemas, names)


def turn_tools(where: str, items: Sequence[Any], own: TurnTools,
               toolsets: tuple[Toolset, ...], output: bool) -> Flow:
    """Ask for the toolsets' tools; returns this turn's ``TurnTools``."""
    listings: list[Listed] = yield ListTools(toolsets)
    return merged(where, items, own, iter(listings), output)


def merged(where: str, items: Sequence[Any], own: TurnTools, listings: Iterator[Listed],
           output: bool) -> TurnTools:
    by_name = dict(own.by_name)
    origin: dict[str, str] = {}  # where each listed name came from, for a clash
    # In the list's order: (schema, name), or (None, source) and the tool for one listed late,
    # whose place is kept until every other name is known.
    entries: list[tuple[Mapping[str, Any] | None, str, Tool | None]] = []
    unlisted: list[str] = []
    own_schemas = iter(own.schemas)
    for i, item in enumerate(items):
        if isinstance(item, Tool):
            entries.append((next(own_schemas), item.name, None))
            continue
        listed = next(listings)
        if listed.error is not None:
            unlisted.append(listed.error)
            continue
        for tool in listed.tools:
            source = f"{tool!r} (listed by {item.name!r}, tools[{i}])"
            if not isinstance(tool, Tool):
                raise DefinitionError(f"{where}: tools[{i}] ({item.name!r}) listed {tool!r}; "
                                      "a toolset must list Tools")
            if getattr(tool, "listed_late", False):
                entries.append((None, source, tool))
                continue
            for name in (tool.name, *tool.aliases):
                _check_free(where, name, by_name, origin, items, output, source)
                by_name[name], origin[name] = tool, source
            entries.append((tool.schema(), tool.name, None))
    schemas: list[Mapping[str, Any]] = []
    names: list[str] = []
    for schema, named, late in entries:
        if late is not None:
            if not _late_tool_fits(where, late, named, by_name, origin, items, output):
                continue
            schema, named = late.schema(), late.name
        assert schema is not None
        schemas.append(schema)
        names.append(named)
    schemas.extend(own_schemas)  # the final-output tool's, if any
    if output:
        names.append(OUTPUT_TOOL)
    return TurnTools(by_name, tuple(schemas), tuple(names), tuple(unlisted), listed=True)


def _late_tool_fits(where: str, tool: Tool, source: str, by_name: dict[str, Tool],
                    origin: dict[str, str], items: Sequence[Any], output: bool) -> bool:
    """Whether a tool its toolset listed only after its first listing takes its names; one
    whose name is taken is left out of the turn, with a warning (once per process), and the
    conversation goes on: the clash came from the server, mid-conversation, not from the
    author, who meets it as an error at the first listing."""
    for name in (tool.name, *tool.aliases):
        try:
            _check_free(where, name, by_name, origin, items, output, source)
        except ToolDefinitionError as exc:
            _warn_once(f"{exc}; {tool.name!r} was listed after the server's first listing and "
                       "is left out of the turn (not offered to the model): give the server a "
                       "prefix to use it")
            return False
    for name in (tool.name, *tool.aliases):
        by_name[name], origin[name] = tool, source
    return True


#: The warnings said so far, so that a clash that lasts is logged once, not every turn.
_warned: set[str] = set()


def _warn_once(text: str) -> None:
    if text not in _warned and len(_warned) < 1000:
        _warned.add(text)
        logger.warning(text)


def _check_free(where: str, name: str, by_name: Mapping[str, Tool], origin: Mapping[str, str],
                items: Sequence[Any], output: bool, source: str) -> None:
    if output and name == OUTPUT_TOOL:
        raise ToolDefinitionError(f"{where}: {source} is named {OUTPUT_TOOL!r}, the name of the "
                                  "final-output tool of output_type")
    other = by_name.get(name)
    if other is None:
        return
    first = origin.get(name) or next(f"{other!r} (tools[{i}])" for i, t in enumerate(items)
                                     if t is other)
    raise ToolDefinitionError(f"{where}: two tools of the turn are named {name!r}: {first} and "
                              f"{source}")
