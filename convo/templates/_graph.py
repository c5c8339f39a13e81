"""The state graph of a template tree: checked when a runner is built, drawn as Mermaid.

``check_states(root)`` rejects a ``Transition`` tool or a ``GotoTemplate`` outside any
``StateMachineTemplate`` and a move or a ``start`` naming an unknown state (naming the state
and the place), and warns about states no move leads to. ``mermaid(root)`` draws the machines
as a Mermaid ``stateDiagram-v2`` (``convo graph FILE[:NAME]`` prints it).

A move belongs to the nearest enclosing machine. A ``SubroutineTemplate`` runs its template on
its own, so machines outside it do not count inside it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Final

import attrs

from .._errors import DefinitionError
from ..tools._termination import EndConversationTool
from ..tools._transition import Transition
from ._base import Template
from ._end import EndTemplate
from ._states import GotoTemplate, StateMachineTemplate
from ._subroutine import SubroutineTemplate
from ._tooling import ToolingTemplate

END = "[*]"


@attrs.define(slots=True)
class Machine:
    """A machine found in a tree: where it is, its moves, and the machines inside its states."""

    machine: StateMachineTemplate
    where: str
    #: (from state, to state or END, what moves: a tool name, "goto", or how it ends)
    edges: list[tuple[str, str, str]] = attrs.Factory(list)
    nested: dict[str, list[Machine]] = attrs.Factory(dict)

    def add(self, edge: tuple[str, str, str]) -> None:
        if edge not in self.edges:
            self.edges.append(edge)

    def reachable(self) -> set[str]:
        seen, todo = {self.machine.start}, [self.machine.start]
        while todo:
            state = todo.pop()
            for source, target, _ in self.edges:
                if source == state and target not in seen and target != END:
                    seen.add(target)
                    todo.append(target)
        return seen


def machines(root: Template) -> list[Machine]:
    """The outermost machines of a tree (nested ones hang off ``Machine.nested``), checked."""
    found: list[Machine] = []
    _scan(root, root.label(), None, None, found)
    return found


def _scan(node: Template, where: str, machine: Machine | None, state: str | None,
          found: list[Machine]) -> None:
    if isinstance(node, StateMachineTemplate):
        inner = _machine(node, where)
        (found if machine is None or state is None else
         machine.nested.setdefault(state, [])).append(inner)
        for name, template in node.states.items():
            _scan(template, f"{where} > [{name!r}] {template.label()}", inner, name, found)
        return
    if isinstance(node, SubroutineTemplate):
        machine = state = None  # its template runs on its own session: a boundary
    moves: list[tuple[str, str, str]] = []
    ends: list[str] = []
    if isinstance(node, GotoTemplate):
        moves.append((node.to, "goto", node.label()))
    elif isinstance(node, EndTemplate):
        ends.append("EndTemplate")
    elif isinstance(node, ToolingTemplate):
        for tool in node.tools:
            if isinstance(tool, Transition):
                moves.append((tool.to, tool.name, f"tool {tool.name!r}"))
            elif isinstance(tool, EndConversationTool):
                ends.append(tool.name)
    for to, by, what in moves:
        if machine is None or state is None:
            raise DefinitionError(f"{where}: {what} moves to state {to!r}, but it is not inside "
                                  "any StateMachineTemplate (a SubroutineTemplate's template "
                                  "needs a machine of its own)")
        if to not in machine.machine.states:
            raise DefinitionError(f"{where}: {what} moves to unknown state {to!r}; the "
                                  f"machine at {machine.where} has states "
                                  f"{', '.join(map(repr, machine.machine.states))}")
        machine.add((state, to, by))
    for how in ends:
        if machine is not None and state is not None:
            machine.add((state, END, how))
    for i, kid in enumerate(node.children()):
        _scan(kid, f"{where} > [{i}] {kid.label()}", machine, state, found)


def _machine(node: StateMachineTemplate, where: str) -> Machine:
    if node.start not in node.states:
        raise DefinitionError(f"{where}: start state {node.start!r} is not one of its states "
                              f"({', '.join(map(repr, node.states))})")
    return Machine(node, where)


def _all(found: list[Machine]) -> Iterator[Machine]:
    for machine in found:
        yield machine
        for inner in machine.nested.values():
            yield from _all(inner)


_STATES: Final = (StateMachineTemplate, GotoTemplate)
#: The kinds of node ``has_states`` can say yes of (a quick first question, by class).
MAY_HAVE_STATES: Final = (*_STATES, ToolingTemplate)


def has_states(node: Template) -> bool:
    """Whether ``check_states`` has anything to check in this node: a machine, or a move.
    (Asked of every node each time a runner is built: a loop, no generator.)"""
    if isinstance(node, _STATES):
        return True
    if isinstance(node, ToolingTemplate):
        for tool in node.tools:
            if isinstance(tool, Transition):
                return True
    return False


def check_states(root: Template) -> None:
    """The build-time checks of states (see the module docstring); warns of dead states."""
    for machine in _all(machines(root)):
        reachable = machine.reachable()
        for name in machine.machine.states:
            if name not in reachable:
                warnings.warn(f"{machine.where}: state {name!r} is unreachable: no move from "
                              f"the start state {machine.machine.start!r} leads to it",
                              UserWarning, stacklevel=4)


# --- Mermaid ---------------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def mermaid(root: Template) -> str:
    """A Mermaid ``stateDiagram-v2`` of the machines in ``root`` (DefinitionError if none)."""
    found = machines(root)
    if not found:
        raise DefinitionError(f"{root.label()} has no StateMachineTemplate to draw")
    lines = ["stateDiagram-v2"]
    if len(found) == 1:
        _draw(found[0], "", "    ", lines)
    else:
        for n, machine in enumerate(found, 1):
            lines.append(f'    state "{_text(machine.machine.label())}" as machine{n} {{')
            _draw(machine, f"m{n}_", "        ", lines)
            lines.append("    }")
    return "\n".join(lines) + "\n"


def _draw(machine: Machine, prefix: str, indent: str, lines: list[str]) -> None:
    ids: dict[str, str] = {}
    for name in machine.machine.states:
        ident = base = _id(name, prefix)
        while ident in ids.values():  # "a-b" and "a_b" would be one state
            ident = f"{base}_{len(ids)}"
        ids[name] = ident
    for name, ident in ids.items():
        inner = machine.nested.get(name, [])
        if inner:
            lines.append(f'{indent}state "{_text(name)}" as {ident} {{')
            for n, nested in enumerate(inner, 1):
                _draw(nested, f"{ident}_{n}_", indent + "    ", lines)
            lines.append(f"{indent}}}")
        elif ident != name:
            lines.append(f'{indent}state "{_text(name)}" as {ident}')
    lines.append(f"{indent}[*] --> {ids[machine.machine.start]}")
    for source, target, by in machine.edges:
        lines.append(f"{indent}{ids[source]} --> {ids.get(target, END)}: {_text(by)}")


def _id(name: str, prefix: str) -> str:
    if not prefix and _PLAIN.match(name):
        return name
    return prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _text(text: str) -> str:
    return text.replace('"', "'").replace(":", " ").replace("\n", " ")
