"""Walking a template tree, and the checks a runner makes on it when it is built.

Kept apart from ``base.py`` so that the base class imports nothing below it: this module
knows the concrete templates (loops, breaks) that the checks are about.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._errors import DefinitionError
from ..tools._toolset import Toolset, is_toolset
from ._base import Template
from ._control import BreakTemplate, LoopTemplate
from ._graph import MAY_HAVE_STATES, check_states, has_states

Where = tuple[Any, ...]
"""Where a node is: ``(root label,)`` or ``(parent's Where, index, node)``; ``path`` says it
(made only when a message needs it: a runner checks its tree each time it is built)."""


def path(where: Where) -> str:
    """``where`` as the message shows it: ``LinearTemplate > [1] LoopTemplate``."""
    if len(where) == 1:
        return str(where[0])
    parent, i, node = where
    return f"{path(parent)} > [{i}] {node.label()}"


def walk(root: Template, where: str = "") -> Iterator[tuple[Template, Where, int]]:
    """Yield ``(template, where, enclosing loop count)`` for every node, depth first
    (``path(where)`` is its place in the tree)."""
    stack: list[tuple[Template, Where, int]] = [(root, (where or root.label(),), 0)]
    while stack:
        node, at, loops = stack.pop()
        yield node, at, loops
        inner = loops + isinstance(node, LoopTemplate)
        kids = node.children()
        for i in range(len(kids) - 1, -1, -1):
            kid = kids[i]
            if not isinstance(kid, Template):
                raise DefinitionError(
                    f"{path(at)}: child {i} is {type(kid).__name__} {kid!r}, expected a Template"
                )
            stack.append((kid, (at, i, kid), inner))


def validate_tree(root: Template) -> None:
    """Reject duplicate ``template_id``s (naming both places), a Break outside any loop, and
    state machines that name unknown states (``graph.check_states``, asked only of a tree
    that has states or moves)."""
    if not isinstance(root, Template):
        raise DefinitionError(f"expected a Template to run, got {type(root).__name__} {root!r}")
    if not _plain(root):
        _check(root)


def _plain(root: Template) -> bool:
    """Whether ``_check`` has nothing to find in the tree: every child a Template, no
    ``template_id`` on two nodes, no Break outside a loop, no states or moves. Made for every
    runner built, so it makes no places, and asks of each node's class (``issubclass``, not
    ``isinstance``: a negative ``isinstance`` looks up the node's ``__class__`` again, for
    proxies; an object that is not an instance of a Template class gets the full check); a
    tree it is unsure of gets the full check, which names the places."""
    seen: dict[str, Template] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, looped = stack.pop()
        kind = type(node)
        if not issubclass(kind, Template):
            return False
        if node.template_id is not None and seen.setdefault(node.template_id, node) is not node:
            return False
        if not looped and issubclass(kind, BreakTemplate):
            return False
        if issubclass(kind, MAY_HAVE_STATES) and has_states(node):
            return False
        looped = looped or issubclass(kind, LoopTemplate)
        for kid in node.children():
            stack.append((kid, looped))
    return True


def _check(root: Template) -> None:
    seen: dict[str, tuple[Template, Where]] = {}
    states = False
    for node, where, loops in walk(root):
        if node.template_id is not None:
            first = seen.setdefault(node.template_id, (node, where))
            if first[0] is not node:
                raise DefinitionError(f"duplicate template_id {node.template_id!r}: at "
                                      f"{path(first[1])} and at {path(where)}")
        if isinstance(node, BreakTemplate) and loops == 0:
            raise DefinitionError(
                f"BreakTemplate at {path(where)} is not inside any LoopTemplate: "
                "it can only leave an enclosing loop"
            )
        states = states or has_states(node)
    if states:
        check_states(root)  # states: unknown targets, moves outside a machine


def termination_tools(root: Template) -> set[str]:
    """Names of convo's own turn-ending tools in the tree (``finish`` and other terminal
    tools): front ends do not show their calls, only their effect."""
    names: set[str] = set()
    for node, _, _ in walk(root):
        for tool in getattr(node, "tools", ()):
            if getattr(tool, "shows_effect_only", False):  # a toolset has no such question
                names.add(tool.name)
    return names


def toolsets(root: Template) -> list[Toolset]:
    """Every toolset in the tree's tool lists (an ``MCPServer``), once each, in tree order,
    and the toolset a listed tool names as its ``toolset`` (``[*server]`` puts an
    ``MCPServer``'s tools in a list): what ``Runner.close()`` closes."""
    found: dict[int, Toolset] = {}
    for node, _, _ in walk(root):
        for item in getattr(node, "tools", ()):
            source = item if is_toolset(item) else getattr(item, "toolset", None)
            if source is not None and is_toolset(source):
                found.setdefault(id(source), source)
    return list(found.values())
