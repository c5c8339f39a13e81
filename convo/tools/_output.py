"""Typed output: the final-output tool a turn with ``output_type`` ends through.

The model gives its result as the arguments of ``final_result``; they are validated against
the output type (a pydantic model, a dataclass or a TypedDict gives the tool's parameters
directly; any other type is wrapped as ``{"result": ...}``). A reply whose whole text is JSON
of the output type is accepted too (servers with a structured-output mode answer that way).
"""

from __future__ import annotations

import json
from typing import Any, Final

from .._errors import DefinitionError, ToolArgumentError
from .._messages import ToolCall
from ._schema import _fields_of, describe, json_schema
from ._validation import Arguments, Spec, explain

OUTPUT_TOOL: Final = "final_result"
OUTPUT_DESCRIPTION: Final = ("Give your final answer. Call this once, when the answer is "
                             "ready: its arguments are your result.")
OUTPUT_MESSAGE: Final = (f"Do not answer in plain text: call the {OUTPUT_TOOL!r} tool with "
                         "your answer as its arguments.")
NO_OUTPUT: Final = object()


class Output:
    """The output type of a turn: the final-output tool's schema, and validation."""

    __slots__ = ("_fields", "_wrapped", "output_type", "schema")

    def __init__(self, output_type: Any, where: str) -> None:
        self.output_type = output_type
        self._fields = _fields_of(output_type)
        self._wrapped: Arguments | None = None
        if self._fields is None:
            self._wrapped = Arguments(OUTPUT_TOOL, [Spec("result", output_type)], strict=False,
                                      keep_defaults=True, signature=lambda: self.signature)
            parameters = self._wrapped.parameters
        else:
            parameters = json_schema(output_type, f"{where}: output_type")
        if parameters.get("type") != "object":
            raise DefinitionError(f"{where}: output_type {output_type!r} must describe an "
                                  f"object, got the schema {parameters}")
        self.schema = {"type": "function", "function": {
            "name": OUTPUT_TOOL, "description": OUTPUT_DESCRIPTION, "parameters": parameters}}

    @property
    def signature(self) -> str:
        fields = self._fields if self._fields is not None else {"result": self.output_type}
        return ", ".join(f"{k} ({describe(t)})" for k, t in fields.items())

    def validate(self, args: dict[str, Any]) -> Any:
        """The output object from the tool's arguments; ``ToolArgumentError`` if they misfit."""
        if self._wrapped is not None:
            return self._wrapped.validate(args)["result"]
        from pydantic import ValidationError

        from ._schema import adapter
        from ._validation import as_json

        try:
            return adapter(self.output_type).validate_json(as_json(args), strict=True)
        except ValidationError as exc:
            assert self._fields is not None
            raise ToolArgumentError(explain(exc, self._fields, args, f"tool {OUTPUT_TOOL!r}",
                                            top=True, signature=self.signature)) from None

    def from_call(self, call: ToolCall) -> Any:
        if call.raw_arguments is not None:
            try:
                args = json.loads(call.raw_arguments)
            except ValueError:
                args = None
            if not isinstance(args, dict):
                raise ToolArgumentError(
                    f"the arguments for {OUTPUT_TOOL!r} must be a JSON object with "
                    f"{self.signature}, got {call.raw_arguments[:200]!r}")
            return self.validate(args)
        return self.validate(dict(call.arguments))

    def from_text(self, text: str) -> Any:
        """The output, when the whole text is JSON of it; else ``NO_OUTPUT``."""
        text = text.strip()
        if not text.startswith("{"):
            return NO_OUTPUT
        try:
            args = json.loads(text)
            return self.validate(args) if isinstance(args, dict) else NO_OUTPUT
        except (ValueError, ToolArgumentError):
            return NO_OUTPUT

    def dump(self, value: Any) -> str:
        """The output as JSON text (the turn's ``response``)."""
        from ._schema import adapter

        return adapter(self.output_type).dump_json(value).decode()
