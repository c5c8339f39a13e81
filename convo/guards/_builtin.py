"""The built-in guards (API.md §27): ``pii``, ``max_length``, ``matches``, ``json_schema``.

Each returns a ``Guard`` named after itself and takes ``Guard``'s keyword arguments; ``on``
defaults to ``"output"``, the action to ``"redact"`` for ``pii`` and ``"block"`` for the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from . import _pii as _pii
from ._base import Guard, GuardContext
from ._plan import contextless


def _each_text(value: Any, change: Any) -> Any:
    """``change`` applied to the text of ``value`` (a tool call's arguments: every string)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {k: _each_text(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_each_text(v, change) for v in value)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def pii(kinds: tuple[str, ...] = _pii.KINDS, *, on: str = "output", action: str = "redact",
        **options: Any) -> Guard:
    """Personal data: each email, phone number, card number (Luhn-checked) or IBAN (mod-97)
    is replaced by ``[email]``, ``[phone]``, ``[card]`` or ``[iban]`` (with another action,
    a find trips it: ``"found a card number"``)."""
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in _pii.KINDS]
    if unknown:
        raise ValueError(f"pii: kinds must be among {', '.join(map(repr, _pii.KINDS))}; got "
                         f"{', '.join(map(repr, unknown))}")
    words = {"email": "an email address", "phone": "a phone number", "card": "a card number",
             "iban": "an IBAN"}

    maybe, redact = _pii.maybe, _pii.redact

    def redacting(value: Any, ctx: GuardContext | None) -> Any:
        if isinstance(value, str):  # a message's text: the common case
            if not maybe(value):  # nothing any find holds: most replies
                return True
            redacted = redact(value, kinds)
        else:  # a tool call's arguments: every string
            redacted = _each_text(value, lambda text: redact(text, kinds))
        return True if redacted == value else redacted

    def finding(value: Any, ctx: GuardContext | None) -> Any:
        found = _pii.find(_text(value), kinds)
        return True if not found else f"found {words[found[0][2]]}"

    check = redacting if action == "redact" else finding
    check.__name__ = "pii"
    return Guard(contextless(check), on=on, action=action, **{"name": "pii", **options})


def max_length(n: int, *, on: str = "output", **options: Any) -> Guard:
    """Trips when the value is longer than ``n`` characters."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"max_length: n must be a number of characters (0 or more), got {n!r}")

    def check(value: Any, ctx: GuardContext | None) -> bool | str:
        size = len(_text(value))
        return size <= n or f"longer than {n} characters ({size})"

    check.__name__ = "max_length"
    return Guard(contextless(check), on=on, **{"name": "max_length", **options})


def matches(pattern: str | re.Pattern[str], *, on: str = "output", **options: Any) -> Guard:
    """Trips when ``pattern`` (a regular expression, ``re.search``) matches the value."""
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern

    def check(value: Any, ctx: GuardContext | None) -> bool | str:
        found = compiled.search(_text(value))
        return found is None or f"matches {compiled.pattern!r}"

    check.__name__ = "matches"
    return Guard(contextless(check), on=on, **{"name": "matches", **options})


def json_schema(schema: Mapping[str, Any], *, on: str = "output", **options: Any) -> Guard:
    """Trips unless the value parses as JSON and validates against ``schema`` (a JSON Schema;
    the ``jsonschema`` package checks it)."""
    try:
        import jsonschema  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise ImportError("json_schema needs the jsonschema package: pip install jsonschema"
                          ) from exc
    validator = jsonschema.validators.validator_for(schema)(schema)
    validator.check_schema(schema)

    def check(value: Any, ctx: GuardContext | None) -> bool | str:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                return f"not JSON: {exc}"
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return True
        where = "/".join(map(str, error.absolute_path)) or "the top level"
        return f"does not match the schema at {where}: {error.message}"

    check.__name__ = "json_schema"
    return Guard(contextless(check), on=on, **{"name": "json_schema", **options})
