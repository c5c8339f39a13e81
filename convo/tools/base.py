"""Tool, ToolArgument, ToolResult: what a model may call, and what a call gives back."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

import attrs

from ..errors import ToolArgumentError, ToolDefinitionError
from ..messages import ToolCall
from .schema import check, describe, json_schema

NeedsApproval: TypeAlias = "bool | Callable[[dict[str, Any]], bool]"

TERMINAL_NOTE: Final = (
    "Calling this tool ends your turn: its output is your response. "
    "Do not add text after calling it."
)


@attrs.frozen(slots=True)
class ToolArgument:
    """One argument a tool takes: its name, what it is for, its Python type."""

    name: str
    description: str
    value_type: Any
    required: bool = True


@attrs.frozen(slots=True)
class ToolResult:
    """A tool's result. ``content`` that is a string is sent as is; anything else as JSON."""

    content: Any
    metadata: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        return to_text(self.content)


def to_text(value: Any) -> str:
    """What the model sees of a tool's return value: strings as is, the rest JSON once."""
    if isinstance(value, str):
        return value
    if isinstance(value, ToolResult):
        return value.text
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"the tool returned a {type(value).__name__}, which cannot be sent to the model "
            f"as JSON ({exc}); return a str, a ToolResult or JSON values"
        ) from exc


class Tool:
    """A tool a model may call.

    Subclass it with class attributes ``name``, ``description``, ``arguments`` (a dict of
    ``ToolArgument``), optionally ``terminal = True``, and implement ``_execute(args)``
    (``async def`` works too). ``execute(**kwargs)`` validates, then calls ``_execute``.
    """

    name: str = ""
    description: str = ""
    arguments: Mapping[str, ToolArgument] = {}
    terminal: bool = False
    #: Seconds an async tool may run under ``Runner.arun`` before it becomes an error result.
    timeout: float | None = None
    #: Other names the model may call it by (not advertised).
    aliases: tuple[str, ...] = ()
    #: For finish tools: the ToolingTemplate mode whose turns this tool finishes.
    finish_mode: str | None = None
    #: Run it again when a saved conversation is resumed, instead of reusing its saved result
    #: (only for pure tools whose return value matters more than its text: convo's finish
    #: tools). Such tools also never count against ``Limits.tool_calls``.
    rerun_on_resume: bool = False
    #: Ask a person before each call runs: ``True``, or a function of the validated arguments
    #: (``lambda args: args["amount"] > 100``). See docs/approval.md.
    needs_approval: NeedsApproval = False

    def __init__(self, *, needs_approval: NeedsApproval | None = None) -> None:
        if needs_approval is not None:
            self.needs_approval = needs_approval

    def _execute(self, args: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _execute(args)")

    # -- what the runner calls --------------------------------------------------------------

    def requires_approval(self, args: dict[str, Any]) -> bool:
        """Whether this call, with these arguments, must be approved before it runs."""
        rule = self.needs_approval
        return bool(rule(args)) if callable(rule) else bool(rule)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self._execute)

    def invoke(self, args: dict[str, Any]) -> Any:
        """Run with already validated arguments."""
        return self._execute(args)

    async def ainvoke(self, args: dict[str, Any]) -> Any:
        result = self._execute(args)
        if inspect.isawaitable(result):
            result = await result
        return result

    def execute(self, **kwargs: Any) -> Any:
        """Validate ``kwargs``, then run (an async tool returns an awaitable)."""
        return self._execute(self.validate(kwargs))

    # -- schema and validation ---------------------------------------------------------------

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema (built once per tool)."""
        cached: dict[str, Any] | None = self.__dict__.get("_schema")
        if cached is None:
            cached = self.__dict__["_schema"] = self._build_schema()
        return cached

    def _build_schema(self) -> dict[str, Any]:
        where = f"tool {type(self).__name__}"
        if not self.name or not isinstance(self.name, str):
            raise ToolDefinitionError(f"{where} has no name: set the class attribute `name`")
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, arg in self.arguments.items():
            if not isinstance(arg, ToolArgument):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: arguments[{key!r}] must be a ToolArgument, "
                    f"got {type(arg).__name__}"
                )
            prop = json_schema(arg.value_type, f"tool {self.name!r} argument {key!r}")
            if arg.description:
                prop = {**prop, "description": arg.description}
            properties[key] = prop
            if arg.required:
                required.append(key)
        description = self.description or ""
        if self.terminal:
            description = f"{description.rstrip()} {TERMINAL_NOTE}".strip()
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            },
        }

    def signature_text(self) -> str:
        """``a (integer), b (string, optional)`` — for messages to the model."""
        parts = [
            f"{k} ({describe(a.value_type)}{'' if a.required else ', optional'})"
            for k, a in self.arguments.items()
        ]
        return ", ".join(parts) or "no arguments"

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Check arguments against ``arguments``; ``ToolArgumentError`` saying what is wrong."""
        unexpected = [k for k in args if k not in self.arguments]
        if unexpected:
            raise ToolArgumentError(
                f"tool {self.name!r} got unexpected argument "
                f"{', '.join(repr(k) for k in unexpected)}; it takes {self.signature_text()}"
            )
        checked: dict[str, Any] = {}
        for key, arg in self.arguments.items():
            if key in args:
                checked[key] = check(arg.value_type, args[key],
                                     f"tool {self.name!r} argument {key!r}")
            elif arg.required:
                raise ToolArgumentError(
                    f"tool {self.name!r} is missing required argument {key!r} "
                    f"({describe(arg.value_type)}); it takes {self.signature_text()}"
                )
        return checked

    def parse_raw(self, raw: str) -> dict[str, Any]:
        """Arguments from text that was not a JSON object (override to accept bare strings)."""
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ToolArgumentError(
                f"the arguments for {self.name!r} are not valid JSON ({exc.args[0]}): got "
                f"{raw[:200]!r}; send a JSON object with {self.signature_text()}"
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentError(
                f"the arguments for {self.name!r} must be a JSON object, got {raw[:200]!r}; "
                f"send an object with {self.signature_text()}"
            )
        return value

    def arguments_of(self, call: ToolCall) -> dict[str, Any]:
        """The validated arguments of a model's call."""
        args = call.arguments if call.raw_arguments is None else self.parse_raw(call.raw_arguments)
        return self.validate(args)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
