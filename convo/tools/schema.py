"""Python types ↔ JSON schema, and checking a model's argument values against them.

One place serves both ``Tool`` subclasses (``ToolArgument.value_type``) and ``@tool``
functions (type hints), so both give the same real JSON-schema types.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union

from ..errors import ToolArgumentError, ToolDefinitionError

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _optional_inner(tp: Any) -> Any | None:
    """``X`` for ``X | None`` / ``Optional[X]``; None when ``tp`` is not optional."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0]
    return None


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    """``{"type": ..., "enum": [...]}``; the type is left out when the values mix types."""
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        return {"type": kinds.pop(), "enum": values}
    return {"enum": values}


def json_schema(tp: Any, where: str = "argument") -> dict[str, Any]:
    """The JSON schema of a Python type; ``ToolDefinitionError`` for one it cannot describe."""
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    inner = _optional_inner(tp)
    if inner is not None:
        return {"anyOf": [json_schema(inner, where), {"type": "null"}]}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return _enum_schema(list(args))
    if tp in (list, tuple, Sequence) or origin in (list, tuple, Sequence):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = json_schema(args[0], where)
        return schema
    if tp in (dict, Mapping) or origin in (dict, Mapping):
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = json_schema(args[1], where)
        return schema
    if origin in (Union, types.UnionType):
        return {"anyOf": [json_schema(a, where) for a in args]}
    raise ToolDefinitionError(
        f"{where}: cannot describe type {tp!r} to a model; use str, int, float, bool, list[...], "
        "dict[str, ...], Literal[...], an Enum, or Optional of those"
    )


def describe(tp: Any) -> str:
    """A short human name of a type, for messages to the model."""
    if tp is Any:
        return "any value"
    if tp in _SCALARS:
        return _SCALARS[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    inner = _optional_inner(tp)
    if inner is not None:
        return f"{describe(inner)} or null"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if tp in (list, tuple) or origin in (list, tuple, Sequence):
        return f"array of {describe(args[0])}" if args and args[0] is not Ellipsis else "array"
    if tp in (dict, Mapping) or origin in (dict, Mapping):
        return "object"
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in args)
    return getattr(tp, "__name__", repr(tp))


def _shown(value: Any) -> str:
    kind = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
            dict: "object", type(None): "null"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text if len(text) <= 60 else text[:57] + '...'}"


def check(tp: Any, value: Any, where: str) -> Any:
    """``value`` checked against ``tp`` (enums converted); ``ToolArgumentError`` if it misfits.

    Strict on purpose (``"3"`` is not an integer): the model is told and can correct itself.
    An integer is accepted where a number is expected.
    """
    if tp is Any:
        return value
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp in _SCALARS:
        if type(value) is tp:
            return value
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if member.value == value and type(member.value) is type(value):
                return member
    elif (inner := _optional_inner(tp)) is not None:
        return None if value is None else check(inner, value, where)
    else:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Literal:
            if any(value == a and type(value) is type(a) for a in args):
                return value
        elif tp in (list, tuple, Sequence) or origin in (list, tuple, Sequence):
            if isinstance(value, list):
                if not args or args[0] is Ellipsis:
                    return value
                return [check(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        elif tp in (dict, Mapping) or origin in (dict, Mapping):
            if isinstance(value, dict):
                if len(args) != 2 or args[1] is Any:
                    return value
                return {k: check(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
        elif origin in (Union, types.UnionType):
            for option in args:
                try:
                    return check(option, value, where)
                except ToolArgumentError:
                    continue
    raise ToolArgumentError(f"{where} must be {describe(tp)}, got {_shown(value)}")
