"""``@tool``: a typed, documented function becomes a Tool."""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from .._errors import ToolDefinitionError
from ._base import NeedsApproval, Tool, ToolArgument, checked_approver
from ._context import ToolContext
from ._schema import _optional_inner
from ._validation import Arguments, Spec


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description and the argument descriptions of a Google, Sphinx (``:param x:``),
    NumPy or Epydoc docstring; text in sections other than the arguments is left out."""
    if not doc or not doc.strip():
        return "", {}
    import docstring_parser

    parsed = docstring_parser.parse(doc)
    text = " ".join(p for p in (parsed.short_description, parsed.long_description) if p)
    args = {p.arg_name.lstrip("*"): " ".join((p.description or "").split())
            for p in parsed.params}
    return " ".join(text.split()), args


def _hints(fn: Callable[..., Any], name: str,
           localns: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parameters' type hints; the return annotation is never needed, so never resolved.

    ``localns`` (the namespace where ``@tool`` was applied) resolves names of classes
    defined inside a function.
    """
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
    holder = types.SimpleNamespace(__annotations__=annotations,
                                   __globals__=getattr(fn, "__globals__", {}))
    try:
        return typing.get_type_hints(holder, localns=dict(localns or {}), include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"@tool {name!r}: cannot resolve the type hints ({exc})"
                                  ) from exc


def _is_context(hint: Any) -> bool:
    return hint is ToolContext or _optional_inner(hint) is ToolContext


class FunctionTool(Tool):
    """A tool made from a function by ``@tool``; calling it calls the function."""

    #: Whether the function is ``async def`` (an attribute, set once: read per call).
    is_async: bool = False

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, terminal: bool = False,
        timeout: float | None = None, retries: int | None = None, strict: bool = False,
        localns: Mapping[str, Any] | None = None, needs_approval: NeedsApproval = False,
        inline: bool = False, approver: str = "user",
    ) -> None:
        self.fn = fn
        self.inline = inline
        self.needs_approval = needs_approval
        self.name = name or fn.__name__
        self.approver = checked_approver(self.name, approver)
        summary, arg_docs = parse_docstring(fn.__doc__)
        self.description = description if description is not None else summary
        self.terminal, self.timeout, self.retries, self.strict = terminal, timeout, retries, strict
        if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int)
                                    or retries < 0):
            raise ToolDefinitionError(f"@tool {self.name!r}: retries must be an int >= 0 or "
                                      f"None, got {retries!r}")
        specs = self._specs_from(fn, arg_docs, localns)
        self.arguments = {s.name: ToolArgument(s.name, s.description, s.annotation,
                                               required=s.required) for s in specs}
        self.compiled = Arguments(self.name, specs, strict=strict, keep_defaults=True,
                                  signature=self.signature_text)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.schema()

    def _specs_from(self, fn: Callable[..., Any], arg_docs: dict[str, str],
                    localns: Mapping[str, Any] | None) -> list[Spec]:
        hints = _hints(fn, self.name, localns)
        specs: list[Spec] = []
        for i, param in enumerate(inspect.signature(fn).parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"@tool {self.name!r}: *args and **kwargs cannot be described to a model"
                )
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"@tool {self.name!r}: argument {param.name!r} needs a type hint"
                )
            hint = hints[param.name]
            if _is_context(hint):
                if i != 0:
                    raise ToolDefinitionError(f"@tool {self.name!r}: the ToolContext must be "
                                              f"the first parameter, not {param.name!r}")
                self.takes_context = True
                continue
            default = param.default
            if default is inspect.Parameter.empty:
                # Optional without a default may be left out, and is then None.
                default = None if _optional_inner(hint) is not None else ...
            specs.append(Spec(param.name, hint, default, arg_docs.get(param.name, "")))
        return specs

    def invoke(self, args: dict[str, Any], context: Any = None) -> Any:
        """Call the function with validated arguments (its ``ToolContext`` first, when it takes
        one): a call of a function tool goes to its function at once."""
        if self.takes_context:
            return self.fn(context, **args)
        return self.fn(**args)

    _execute = invoke  # what ``Tool.invoke`` runs (``ainvoke``, ``execute``): the same call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, terminal: bool = False,
    timeout: float | None = None, retries: int | None = None, strict: bool = False,
    needs_approval: NeedsApproval = False, inline: bool = False, approver: str = "user",
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
    description: str | None = None, terminal: bool = False, timeout: float | None = None,
    retries: int | None = None, strict: bool = False, needs_approval: NeedsApproval = False,
    inline: bool = False, approver: str = "user",
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed, documented function (sync or ``async def``) into a Tool.

    The name comes from the function, the description and argument descriptions from its
    docstring (Google, Sphinx or NumPy style), the schema and validation from the type hints
    through pydantic; arguments with defaults are optional. A first parameter typed
    ``ToolContext`` receives the call's context and is not shown to the model.
    ``retries=N`` ends the turn after N+1 failed calls of this tool in a row; ``strict=True``
    sends the schema in OpenAI's strict form. ``needs_approval`` (a bool, or a function of the
    arguments) makes the runner ask a person before each call runs (docs/approval.md);
    ``approver="operator"`` has staff decide it when served (a user gets 403).
    Under ``arun()`` and serving a sync function runs in a worker thread, so it never blocks
    the event loop; ``inline=True`` runs a trivial one on the loop instead.
    """

    def make(f: Callable[..., Any], localns: Mapping[str, Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, terminal=terminal,
                            timeout=timeout, retries=retries, strict=strict, localns=localns,
                            needs_approval=needs_approval, inline=inline, approver=approver)

    def build(f: Callable[..., Any]) -> FunctionTool:
        return make(f, sys._getframe(1).f_locals)

    return build if fn is None else make(fn, sys._getframe(1).f_locals)
