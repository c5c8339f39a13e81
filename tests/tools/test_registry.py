"""The tool registry: the four built-in names, their metadata, and register()."""

from __future__ import annotations

import pytest

from convo import EndConversationTool, FinishResponseTool, FinishTaskTool, FinishTool, tool
from convo.tools import ToolRegistry, registry


@pytest.mark.parametrize(("name", "cls", "title"), [
    ("finishTool", FinishTool, "Finish"),
    ("endConversationTool", EndConversationTool, "End conversation"),
    ("finishResponseTool", FinishResponseTool, "Finish response"),
    ("finishTaskTool", FinishTaskTool, "Finish task"),
])
def test_built_in_names(name: str, cls: type, title: str) -> None:
    assert name in registry
    assert registry.metadata(name) == {"title": title, "kind": "tool"}
    made = registry.create(name)
    assert type(made) is cls
    assert registry.create(name) is not made  # a factory: a new tool each time


def test_the_built_ins_are_listed() -> None:
    assert {"finishTool", "endConversationTool", "finishResponseTool",
            "finishTaskTool"} <= set(registry)


def test_register_a_user_tool() -> None:
    @tool
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    reg = ToolRegistry()
    reg.register("shoutTool", lambda: shout, title="Shout",
                 capabilities={"staticConfigurable": True})
    reg.register("plain", lambda: shout)

    assert list(reg) == ["shoutTool", "plain"]
    assert len(reg) == 2
    assert reg.metadata("shoutTool") == {"title": "Shout", "kind": "tool",
                                         "capabilities": {"staticConfigurable": True}}
    assert reg.metadata("plain") == {"title": "plain", "kind": "tool"}
    assert reg.create("shoutTool").execute(text="hi") == "HI"
    assert reg["plain"].name == "plain"


def test_registering_a_name_twice_is_an_error() -> None:
    reg = ToolRegistry()
    reg.register("x", FinishTool)
    with pytest.raises(ValueError, match="a tool is already registered as 'x'"):
        reg.register("x", FinishTool)


def test_an_unknown_name_lists_the_registered_ones() -> None:
    reg = ToolRegistry()
    reg.register("a", FinishTool)
    with pytest.raises(KeyError, match="no tool registered as 'b'; registered: a"):
        reg.create("b")
