"""A tool's arguments, compiled once into a pydantic model; pydantic's errors told to the model.

``Arguments`` is built per tool from its argument specs. ``validate`` checks the model's JSON
in pydantic's strict JSON mode (``"3"`` is not an integer: the model is told and corrects
itself) and converts it to what the function asks for (an object becomes the pydantic model,
dataclass or TypedDict; a string the Enum member, date or UUID), and says what is wrong in
convo's expected-vs-got style:
``tool 'greet' argument 'who' must be string, got integer 7``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Final, Union

import attrs

from .._errors import ToolArgumentError
from ._schema import (
    _fields_of,
    _optional_inner,
    adapter,
    definition_error,
    describe,
    strict_schema,
    tidy,
)

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

#: The default of an argument that may be left out and then stays out of the arguments.
ABSENT: Final = object()
_TYPE_ERRORS: Final = frozenset({"int_from_float", "enum", "literal_error", "none_required",
                                  "is_instance_of", "model_attributes_type"})


_PLAIN: Final = (str, int, bool)  # types whose JSON values need no conversion
_PLAIN_DEFAULTS: Final = (str, int, bool, float, type(None))
_to_json: Any = None
_SerializationError: Any = None
_ValidationError: Any = None


def _bind() -> None:
    """Bind pydantic's parts to this module's names, once (pydantic is imported lazily)."""
    global _to_json, _SerializationError, _ValidationError
    if _to_json is None:
        from pydantic_core import PydanticSerializationError, ValidationError, to_json

        _to_json, _SerializationError, _ValidationError = (
            to_json, PydanticSerializationError, ValidationError)


@attrs.frozen(slots=True)
class Spec:
    """One argument: its name, type (``Annotated`` allowed), default, description."""

    name: str
    annotation: Any
    default: Any = ...  # ``...`` = required; ``ABSENT`` = may be left out; else the default
    description: str = ""

    @property
    def required(self) -> bool:
        """No default (``...``, or a ``Field(...)`` without one)."""
        is_required = getattr(self.default, "is_required", None)  # a pydantic FieldInfo
        return self.default is ... or (callable(is_required) and bool(is_required()))


def _field(spec: Spec) -> tuple[Any, Any]:
    from pydantic import Field
    from pydantic.fields import FieldInfo

    annotation = spec.annotation
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        # A plain string in Annotated is a description; explicit ones beat the docstring.
        meta = [Field(description=m) if isinstance(m, str) else m for m in meta]
    else:
        base, meta = annotation, []
    if spec.description:
        meta.insert(0, Field(description=spec.description))
    if meta:
        annotation = Annotated[(base, *meta)]
    if isinstance(spec.default, FieldInfo):
        return annotation, spec.default
    if spec.default is ABSENT:
        return annotation, Field(default_factory=lambda: None)
    return annotation, spec.default


class Arguments:
    """The arguments of one tool: their pydantic model, JSON schema, and validation."""

    __slots__ = ("_model", "_names", "_nullable", "_plain", "_signature", "_validate_json",
                 "keep_defaults", "parameters", "specs", "tool_name")

    def __init__(self, tool_name: str, specs: Sequence[Spec], *, strict: bool,
                 keep_defaults: bool, signature: Callable[[], str]) -> None:
        from pydantic import ConfigDict, create_model

        _bind()
        self.tool_name = tool_name
        self.specs = tuple(specs)
        self.keep_defaults = keep_defaults
        self._signature = signature
        self._names = tuple(s.name for s in specs)
        where = f"tool {tool_name!r}"
        fields = {s.name: _field(s) for s in specs}
        try:
            self._model: type[BaseModel] = create_model(  # type: ignore[call-overload]
                f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
            self.parameters = tidy(self._model.model_json_schema())
            self.parameters.setdefault("required", [])
            self._validate_json = self._model.__pydantic_validator__.validate_json
        except Exception as exc:
            from pydantic import PydanticUserError

            if not isinstance(exc, PydanticUserError | TypeError | NameError):
                raise
            bad = _first_bad(specs, exc)
            raise definition_error(f"{where} argument {bad.name!r}", bad.annotation,
                                   exc) from None
        self._nullable: frozenset[str] = frozenset()
        if strict:
            self.parameters, nullable = strict_schema(self.parameters, where)
            self._nullable = frozenset(nullable)
        # Arguments all of plain str, int or bool (no constraints): a call giving each of them
        # with exactly that type is valid as it is, and pydantic is not asked (most calls).
        plain = all(any(s.annotation is kind for kind in _PLAIN)
                    and (s.default is ... or s.default is ABSENT
                         or s.default.__class__ in _PLAIN_DEFAULTS)  # no pydantic Field
                    for s in self.specs)
        self._plain = tuple((s.name, s.annotation) for s in self.specs) if plain else None

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Checked and coerced arguments; ``ToolArgumentError`` saying what is wrong."""
        # It runs for every tool call: pydantic's parts were bound once, by _bind().
        plain = self._plain
        if plain is not None and len(args) == len(plain):
            valid: dict[str, Any] = {}
            for name, kind in plain:
                value = args.get(name, ABSENT)  # ABSENT: an unexpected argument instead
                if value.__class__ is not kind:
                    break
                valid[name] = value
            else:
                return valid
        names = self._names
        unexpected = [k for k in args if k not in names]
        if unexpected:
            raise ToolArgumentError(
                f"tool {self.tool_name!r} got unexpected argument "
                f"{', '.join(repr(k) for k in unexpected)}; it takes {self._signature()}"
            )
        if self._nullable:  # strict mode: null means "left out"
            args = {k: v for k, v in args.items() if v is not None or k not in self._nullable}
        try:
            try:
                text = _to_json(args)
            except _SerializationError:  # Python values given to execute() by code
                model = self._model.model_validate(args)
            else:
                model = self._validate_json(text, strict=True)
        except _ValidationError as exc:
            types_ = {s.name: s.annotation for s in self.specs}
            raise ToolArgumentError(explain(exc, types_, args, f"tool {self.tool_name!r}",
                                            top=True, signature=self._signature())) from None
        values: dict[str, Any] = model.__dict__  # exactly the fields (extra="forbid")
        if self.keep_defaults:
            return dict(values)
        return {name: value for name, value in values.items() if name in args}


def as_json(value: Any) -> bytes:
    """JSON of what a model sent (or of Python values given to ``execute``: an Enum member,
    a pydantic model, a dataclass are written as pydantic dumps them); ``TypeError`` if
    there is none."""
    from pydantic_core import PydanticSerializationError, to_json

    try:
        return to_json(value)
    except PydanticSerializationError as exc:
        raise TypeError(str(exc)) from None


def _first_bad(specs: Sequence[Spec], exc: Exception) -> Spec:
    """The argument whose type pydantic refused (the first one it cannot build alone)."""
    from pydantic import TypeAdapter

    for spec in specs:
        try:
            TypeAdapter(spec.annotation).json_schema()
        except Exception:
            return spec
    return specs[0]


# -- pydantic's errors in convo's words ------------------------------------------------------


def _shown(value: Any) -> str:
    kind = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
            dict: "object", type(None): "null"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text if len(text) <= 60 else text[:57] + '...'}"


def _strip(tp: Any) -> Any:
    while True:
        if typing.get_origin(tp) is Annotated:
            tp = typing.get_args(tp)[0]
        elif (inner := _optional_inner(tp)) is not None:
            tp = inner
        else:
            return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _step(tp: Any, key: Any) -> Any:
    """The type at ``key`` inside ``tp`` (an index, a dict key, a field); None if unknown."""
    tp = _strip(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(key, int):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return args[key] if key < len(args) else None
        if origin in (list, tuple, Sequence, set, frozenset):
            return args[0] if args else Any
        return Any if tp in (list, tuple) else None
    if origin in (dict, Mapping):
        return args[1] if len(args) == 2 else Any
    if tp in (dict, Mapping):
        return Any
    fields = _fields_of(tp)
    return fields.get(key) if fields is not None else None


def _value_at(value: Any, key: Any) -> Any:
    try:
        return value[key]
    except (KeyError, IndexError, TypeError):
        return getattr(value, str(key), None)


def _path(loc: Sequence[Any]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f"[{k!r}]" for k in loc)


def explain(exc: ValidationError, types_: Mapping[str, Any], values: Mapping[str, Any],
            where: str, *, top: bool, signature: str = "") -> str:
    """One sentence per problem pydantic found, joined with ``; ``."""
    sentences: list[str] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"]) if top else ("", *error["loc"])
        sentence = _sentence(error, loc, types_, values, where, top, signature)
        if sentence not in sentences:
            sentences.append(sentence)
    return "; ".join(sentences)


def _sentence(error: Any, loc: tuple[Any, ...], types_: Mapping[str, Any],
              values: Mapping[str, Any], where: str, top: bool, signature: str) -> str:
    if not loc or loc[0] not in types_:
        return f"{where}: {error['msg']}"
    tp, value, depth = types_[loc[0]], values.get(loc[0]), 1
    while depth < len(loc) and not _is_union(_strip(tp)):
        inner = _step(tp, loc[depth])
        if inner is None:
            break
        tp, value, depth = inner, _value_at(value, loc[depth]), depth + 1
    head = (f"{where} argument {loc[0]!r}" if top else where) + _path(loc[1:depth])
    kind: str = error["type"]
    if kind == "extra_forbidden":
        parent = (f"{where} argument {loc[0]!r}" if top else where) + _path(loc[1:-1])
        return f"{parent} got unexpected field {loc[-1]!r}"
    if kind == "missing" and depth == len(loc):
        if top and depth == 1:
            return (f"{where} is missing required argument {loc[0]!r} ({describe(tp)}); "
                    f"it takes {signature}")
        parent = (f"{where} argument {loc[0]!r}" if top else where) + _path(loc[1:-1])
        return f"{parent} is missing required field {loc[-1]!r} ({describe(tp)})"
    if depth < len(loc) and _is_union(_strip(tp)):
        return f"{head} must be {describe(tp)}, got {_shown(value)}"
    if depth == len(loc) and (kind in _TYPE_ERRORS or kind.endswith(("_type", "_parsing"))):
        return f"{head} must be {describe(tp)}, got {_shown(error['input'])}"
    message: str = error["msg"]
    if message.startswith("Input should be "):
        return f"{head} must be {message[16:]}, got {_shown(error['input'])}"
    return f"{head}: {message[:1].lower()}{message[1:]}, got {_shown(error['input'])}"


def check(tp: Any, value: Any, where: str) -> Any:
    """``value`` validated against ``tp`` as JSON, in pydantic's strict mode (``"3"`` is not an
    integer; an object becomes a model); ``ToolArgumentError`` saying expected and got."""
    from pydantic import ValidationError

    if tp is Any:
        return value
    try:
        return adapter(tp).validate_json(as_json(value), strict=True)
    except ValidationError as exc:
        raise ToolArgumentError(explain(exc, {"": tp}, {"": value}, where, top=False)) from None
