"""Python types → JSON schema, through pydantic; the schema convo sends to the model.

One place serves ``Tool`` subclasses (``ToolArgument.value_type``), ``@tool`` functions (type
hints) and typed output, so all give the same schemas. pydantic is imported on first use
(it costs ~40 ms), never by ``import convo``.

What pydantic writes is tidied for models: no ``title`` keys, ``$ref``s inlined (unless a type
refers to itself), and ``additionalProperties: false`` on every object with fixed fields.
``strict_schema`` then makes the form OpenAI's strict mode accepts (docs/tools.md).
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from .._errors import ToolDefinitionError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _optional_inner(tp: Any) -> Any | None:
    """``X`` for ``X | None`` / ``Optional[X]``; None when ``tp`` is not optional."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0]
    return None


def definition_error(where: str, tp: Any, exc: Exception) -> ToolDefinitionError:
    """The author's mistake of a type pydantic cannot handle, said plainly."""
    reason = str(exc).split("\n", 1)[0]
    return ToolDefinitionError(
        f"{where}: cannot describe type {tp!r} to a model ({reason}); use a type pydantic "
        "supports: str, int, float, bool, list[...], dict[str, ...], Literal[...], an Enum, "
        "a pydantic model, a dataclass, a TypedDict (from typing_extensions), or Optional of those"
    )


@functools.lru_cache(maxsize=512)
def adapter(tp: Any) -> TypeAdapter[Any]:
    """A cached pydantic ``TypeAdapter`` (pydantic is imported here, on first use)."""
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


def _pydantic_failure(exc: Exception) -> bool:
    from pydantic import PydanticUserError

    return isinstance(exc, PydanticUserError | TypeError | NameError)


def json_schema(tp: Any, where: str = "argument") -> dict[str, Any]:
    """The JSON schema of a Python type; ``ToolDefinitionError`` for one it cannot describe."""
    try:
        raw = adapter(tp).json_schema()
    except Exception as exc:
        if _pydantic_failure(exc):
            raise definition_error(where, tp, exc) from None
        raise
    return tidy(raw)


def tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema without titles, with ``$ref``s inlined, objects closed."""
    defs: dict[str, Any] = schema.get("$defs", {})
    try:
        inlined: dict[str, Any] = _tidy(schema, defs, (), inline=True)
        return inlined
    except RecursionError:
        pass
    # A type that refers to itself: keep its $defs.
    out: dict[str, Any] = _tidy(schema, defs, (), inline=False)
    out["$defs"] = {k: _tidy(v, defs, (), inline=False) for k, v in defs.items()}
    return out


def _tidy(node: Any, defs: Mapping[str, Any], seen: tuple[str, ...], *, inline: bool) -> Any:
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if inline and isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/"):]
        if name in seen:
            raise RecursionError(name)
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _tidy({**defs[name], **rest}, defs, (*seen, name), inline=True)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs" or (key == "title" and isinstance(value, str)):
            continue
        if key == "properties":
            out[key] = {k: _tidy(v, defs, seen, inline=inline) for k, v in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_tidy(v, defs, seen, inline=inline) for v in value]
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _tidy(value, defs, seen, inline=inline)
        else:
            out[key] = value
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def strict_schema(parameters: dict[str, Any], where: str) -> tuple[dict[str, Any], set[str]]:
    """The form of ``parameters`` that OpenAI's strict mode accepts, and the top-level
    properties made nullable (a model's ``null`` for them means "left out").

    Every object lists all its properties as required; a property that was optional accepts
    ``null`` instead; ``default`` keys go. A free-form object (``dict``) cannot be strict.
    """
    made_nullable: set[str] = set()
    out = _strict(parameters, where, made_nullable, top=True)
    return out, made_nullable


def _strict(node: Any, where: str, made_nullable: set[str], *, top: bool = False) -> Any:
    if not isinstance(node, dict):
        return node
    if node.get("type") == "object" and "properties" not in node:
        raise ToolDefinitionError(
            f"{where}: strict mode cannot describe a free-form object (a dict); use a pydantic "
            "model, a dataclass or a TypedDict, or strict=False"
        )
    out = {k: v for k, v in node.items() if k != "default"}
    for key in _SCHEMA_LISTS:
        if key in out:
            out[key] = [_strict(v, where, made_nullable) for v in out[key]]
    if isinstance(out.get("items"), dict):
        out["items"] = _strict(out["items"], where, made_nullable)
    if "$defs" in out:
        out["$defs"] = {k: _strict(v, where, made_nullable) for k, v in out["$defs"].items()}
    if "properties" in out:
        required = set(out.get("required", ()))
        props: dict[str, Any] = {}
        for name, prop in out["properties"].items():
            prop = _strict(prop, where, made_nullable)
            if name not in required and not _nullable(prop):
                prop = _with_null(prop)
                if top:
                    made_nullable.add(name)
            props[name] = prop
        out["properties"], out["required"] = props, list(props)
        out["additionalProperties"] = False
    return out


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "null" or (isinstance(kind, list) and "null" in kind) or any(
        isinstance(s, dict) and s.get("type") == "null" for s in schema.get("anyOf", ()))


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("type"), str) and set(schema) <= {"type", "description"}:
        return {**schema, "type": [schema["type"], "null"]}
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    described = {"description": schema["description"]} if "description" in schema else {}
    inner = {k: v for k, v in schema.items() if k != "description"}
    return {"anyOf": [inner, {"type": "null"}], **described}


def describe(tp: Any) -> str:
    """A short human name of a type, for messages to the model."""
    if typing.get_origin(tp) is Annotated:
        return describe(typing.get_args(tp)[0])
    if tp is Any:
        return "any value"
    if tp is type(None):
        return "null"
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
    if tp in (list, tuple) or origin in (list, tuple, Sequence, set, frozenset):
        return f"array of {describe(args[0])}" if args and args[0] is not Ellipsis else "array"
    if tp in (dict, Mapping) or origin in (dict, Mapping):
        return "object"
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in args)
    if _fields_of(tp) is not None:
        return f"object {tp.__name__}"
    return getattr(tp, "__name__", repr(tp))


def _fields_of(tp: Any) -> dict[str, Any] | None:
    """Field name → type of a pydantic model, a dataclass or a TypedDict; else None."""
    if not isinstance(tp, type):
        return None
    fields = getattr(tp, "model_fields", None)
    if isinstance(fields, dict):
        return {name: f.annotation for name, f in fields.items()}
    if hasattr(tp, "__dataclass_fields__") or hasattr(tp, "__required_keys__"):
        try:
            return typing.get_type_hints(tp)
        except Exception:
            return None
    return None
