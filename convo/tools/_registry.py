"""The tool registry: built-in and user tools by name, with metadata for tool pickers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from ._base import Tool
from ._termination import EndConversationTool, FinishResponseTool, FinishTaskTool, FinishTool


@attrs.frozen(slots=True)
class RegistryEntry:
    name: str
    factory: Callable[[], Tool]
    metadata: dict[str, Any]


class ToolRegistry:
    """Maps names to tool factories with metadata ``{"title": ..., "kind": "tool"}``."""

    def __init__(self) -> None:
        self._entries: dict[str, RegistryEntry] = {}

    def register(
        self, name: str, factory: Callable[[], Tool], *, title: str | None = None,
        kind: str = "tool", **metadata: Any,
    ) -> None:
        if name in self._entries:
            raise ValueError(f"a tool is already registered as {name!r}")
        self._entries[name] = RegistryEntry(
            name, factory, {"title": title or name, "kind": kind, **metadata}
        )

    def __getitem__(self, name: str) -> RegistryEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(
                f"no tool registered as {name!r}; registered: {', '.join(self._entries)}"
            ) from None

    def create(self, name: str) -> Tool:
        """A new instance of the tool registered as ``name``."""
        return self[name].factory()

    def metadata(self, name: str) -> dict[str, Any]:
        return self[name].metadata

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


registry = ToolRegistry()
registry.register("finishTool", FinishTool, title="Finish")
registry.register("endConversationTool", EndConversationTool, title="End conversation")
registry.register("finishResponseTool", FinishResponseTool, title="Finish response")
registry.register("finishTaskTool", FinishTaskTool, title="Finish task")
