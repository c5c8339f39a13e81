"""``@tool``: a typed, documented function becomes a Tool."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, overload

from ..errors import ToolDefinitionError
from .base import NeedsApproval, Tool, ToolArgument
from .schema import _optional_inner

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|"
                      r"Notes?|Attributes)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the sections) and the ``Args:`` descriptions."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current, arg_indent = header.group(1), None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line)
        if match and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(" ".join(description).split()), args


class FunctionTool(Tool):
    """A tool made from a function by ``@tool``; calling it calls the function."""

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, terminal: bool = False,
        timeout: float | None = None, needs_approval: NeedsApproval = False,
    ) -> None:
        self.fn = fn
        self.needs_approval = needs_approval
        self.name = name or fn.__name__
        summary, arg_docs = parse_docstring(fn.__doc__)
        self.description = description if description is not None else summary
        self.terminal = terminal
        self.timeout = timeout
        self._none_defaults: list[str] = []
        self.arguments = self._arguments_from(fn, arg_docs)
        self._async = inspect.iscoroutinefunction(fn)
        self.schema()  # an unsupported type is the author's mistake: say so now

    def _arguments_from(
        self, fn: Callable[..., Any], arg_docs: dict[str, str]
    ) -> dict[str, ToolArgument]:
        try:
            hints = typing.get_type_hints(fn, include_extras=False)
        except Exception as exc:
            raise ToolDefinitionError(
                f"@tool {self.name!r}: cannot resolve the type hints ({exc})"
            ) from exc
        arguments: dict[str, ToolArgument] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"@tool {self.name!r}: *args and **kwargs cannot be described to a model"
                )
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"@tool {self.name!r}: argument {param.name!r} needs a type hint"
                )
            hint = hints[param.name]
            no_default = param.default is inspect.Parameter.empty
            if no_default and _optional_inner(hint) is not None:
                self._none_defaults.append(param.name)  # Optional: may be left out
            arguments[param.name] = ToolArgument(
                param.name, arg_docs.get(param.name, ""), hint,
                required=no_default and param.name not in self._none_defaults,
            )
        return arguments

    @property
    def is_async(self) -> bool:
        return self._async

    def _execute(self, args: dict[str, Any]) -> Any:
        missing = {name: None for name in self._none_defaults if name not in args}
        return self.fn(**args, **missing)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, terminal: bool = False,
    timeout: float | None = None, needs_approval: NeedsApproval = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
    description: str | None = None, terminal: bool = False, timeout: float | None = None,
    needs_approval: NeedsApproval = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed, documented function (sync or ``async def``) into a Tool.

    The name comes from the function, the description from the docstring, argument
    descriptions from its Google-style ``Args:`` section, the schema from the type hints;
    arguments with defaults are optional. ``needs_approval`` (a bool, or a function of the
    arguments) makes the runner ask a person before each call runs (docs/approval.md).
    """

    def build(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, terminal=terminal,
                            timeout=timeout, needs_approval=needs_approval)

    return build if fn is None else build(fn)
