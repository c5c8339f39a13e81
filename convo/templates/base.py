"""The Template base class, and the checks a runner makes on a template tree when it is built."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from ..errors import DefinitionError
from ..requests import Flow
from ..session import Session


@attrs.define(slots=True, eq=False)
class Template:
    """A building block of a conversation.

    ``render(session)`` returns a generator that yields messages, events and requests (see
    ``convo.requests``) and returns the session. Templates hold no per-run state, so one
    instance may appear in many trees and many runs at once.
    """

    template_id: str | None = attrs.field(default=None, kw_only=True)

    def render(self, session: Session) -> Flow:
        raise NotImplementedError(f"{type(self).__name__} must implement render()")

    def children(self) -> tuple[Template, ...]:
        """The templates this one renders (for validation and tree walks)."""
        return ()

    def label(self) -> str:
        name = type(self).__name__
        return f"{name}(template_id={self.template_id!r})" if self.template_id else name


def walk(root: Template, path: str = "") -> Iterator[tuple[Template, str, int]]:
    """Yield ``(template, path, enclosing loop count)`` for every node, depth first."""
    from .control import LoopTemplate

    stack: list[tuple[Template, str, int]] = [(root, path or root.label(), 0)]
    while stack:
        node, where, loops = stack.pop()
        yield node, where, loops
        inner = loops + isinstance(node, LoopTemplate)
        kids = node.children()
        for i in range(len(kids) - 1, -1, -1):
            kid = kids[i]
            if not isinstance(kid, Template):
                raise DefinitionError(
                    f"{where}: child {i} is {type(kid).__name__} {kid!r}, expected a Template"
                )
            stack.append((kid, f"{where} > [{i}] {kid.label()}", inner))


def validate_tree(root: Template) -> None:
    """Reject duplicate ``template_id``s (naming both places) and a Break outside any loop."""
    from .control import BreakTemplate

    if not isinstance(root, Template):
        raise DefinitionError(f"expected a Template to run, got {type(root).__name__} {root!r}")
    seen: dict[str, tuple[Template, str]] = {}
    for node, where, loops in walk(root):
        if node.template_id is not None:
            first = seen.setdefault(node.template_id, (node, where))
            if first[0] is not node:
                raise DefinitionError(
                    f"duplicate template_id {node.template_id!r}: at {first[1]} and at {where}"
                )
        if isinstance(node, BreakTemplate) and loops == 0:
            raise DefinitionError(
                f"BreakTemplate at {where} is not inside any LoopTemplate: "
                "it can only leave an enclosing loop"
            )
    from .graph import check_states  # states: unknown targets, moves outside a machine

    check_states(root)
