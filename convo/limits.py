"""Limits: a budget for a whole conversation, which ends it cleanly (API.md §10).

Model and tool calls are checked before a call is made (a call that would go past the limit
is not made); tokens are checked after each reply. Reaching a limit ends the run with status
``usage_limit`` and ``Outcome.limit`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from .errors import DefinitionError
from .session import Usage

FIELDS: Final = ("model_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens")


def _check(instance: Limits, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise DefinitionError(f"Limits({attribute.name}=...) must be a whole number >= 0 or "
                              f"None, got {value!r}")


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """The most a conversation may use; ``None`` means no limit on that count."""

    model_calls: int | None = attrs.field(default=None, validator=_check)
    tool_calls: int | None = attrs.field(default=None, validator=_check)
    input_tokens: int | None = attrs.field(default=None, validator=_check)
    output_tokens: int | None = attrs.field(default=None, validator=_check)
    total_tokens: int | None = attrs.field(default=None, validator=_check)

    def tokens_over(self, usage: Usage) -> str | None:
        """The token limit that ``usage`` has gone past, if any."""
        for name, used in (("input_tokens", usage.prompt_tokens),
                           ("output_tokens", usage.completion_tokens),
                           ("total_tokens", usage.total_tokens)):
            limit = getattr(self, name)
            if limit is not None and used > limit:
                return name
        return None

    def left(self, model_calls: int) -> str | None:
        """``"3 of 5 model calls left"``, for telling the model its budget (None: no limit)."""
        if self.model_calls is None:
            return None
        return f"{max(0, self.model_calls - model_calls)} of {self.model_calls} model calls left"

    @classmethod
    def from_mapping(cls, value: Limits | Mapping[str, Any] | None, where: str) -> Limits | None:
        """``Limits`` from a ``Limits`` or a dict (as a bot file may define ``limits``)."""
        if value is None or isinstance(value, Limits):
            return value
        if not isinstance(value, Mapping):
            raise DefinitionError(f"{where}: limits must be a Limits or a dict, "
                                  f"got {type(value).__name__}")
        unknown = sorted(set(value) - set(FIELDS))
        if unknown:
            raise DefinitionError(f"{where}: unknown limit {', '.join(map(repr, unknown))}; "
                                  f"the limits are {', '.join(FIELDS)}")
        return cls(**value)
