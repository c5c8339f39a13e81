"""Limits: a budget for a whole conversation, which ends it cleanly (API.md §10).

Model and tool calls are checked before a call is made (a call that would go past the limit
is not made); tokens are checked after each reply. Reaching a limit ends the run with status
``usage_limit`` and ``Outcome.limit`` naming the field. With ``tell_model=True`` each model call
is also sent what is left (``Limits.left``), in a system note that is not kept in the history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._errors import DefinitionError
from ._session import NO_USAGE, Usage

FIELDS: Final = ("model_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens")
OPTIONS: Final = ("tell_model",)  # not a limit: how the limits are used


def _check(instance: Limits, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise DefinitionError(f"Limits({attribute.name}=...) must be a whole number >= 0 or "
                              f"None, got {value!r}")


def _check_flag(instance: Limits, attribute: attrs.Attribute[Any], value: bool) -> None:
    if not isinstance(value, bool):
        raise DefinitionError(f"Limits({attribute.name}=...) must be True or False, "
                              f"got {value!r}")


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """The most a conversation may use; ``None`` means no limit on that count.

    ``tell_model``: send each model call a system note with what is left of each limit that is
    set (``left``); the note is sent, never stored in the session's history.
    """

    model_calls: int | None = attrs.field(default=None, validator=_check)
    tool_calls: int | None = attrs.field(default=None, validator=_check)
    input_tokens: int | None = attrs.field(default=None, validator=_check)
    output_tokens: int | None = attrs.field(default=None, validator=_check)
    total_tokens: int | None = attrs.field(default=None, validator=_check)
    tell_model: bool = attrs.field(default=False, validator=_check_flag)

    def tokens_over(self, usage: Usage) -> str | None:
        """The token limit that ``usage`` has gone past, if any."""
        for name, used in (("input_tokens", usage.prompt_tokens),
                           ("output_tokens", usage.completion_tokens),
                           ("total_tokens", usage.total_tokens)):
            limit = getattr(self, name)
            if limit is not None and used > limit:
                return name
        return None

    def left(self, model_calls: int, tool_calls: int = 0, usage: Usage | None = None
             ) -> str | None:
        """What is left of each limit that is set, after ``model_calls`` and ``tool_calls``
        made and ``usage`` reported: ``"Budget: 3 of 5 model calls left; 1,200 of 4,000 total
        tokens left."`` (None: no limit is set). The note ``tell_model`` sends."""
        usage = NO_USAGE if usage is None else usage
        used = (model_calls, tool_calls, usage.prompt_tokens, usage.completion_tokens,
                usage.total_tokens)
        parts = [f"{max(0, limit - spent):,} of {limit:,} {name.replace('_', ' ')} left"
                 for name, spent in zip(FIELDS, used, strict=True)
                 if (limit := getattr(self, name)) is not None]
        return f"Budget: {'; '.join(parts)}." if parts else None

    @classmethod
    def from_mapping(cls, value: Limits | Mapping[str, Any] | None, where: str) -> Limits | None:
        """``Limits`` from a ``Limits`` or a dict (as a bot file may define ``limits``)."""
        if value is None or isinstance(value, Limits):
            return value
        if not isinstance(value, Mapping):
            raise DefinitionError(f"{where}: limits must be a Limits or a dict, "
                                  f"got {type(value).__name__}")
        unknown = sorted(set(value) - set(FIELDS) - set(OPTIONS))
        if unknown:
            raise DefinitionError(f"{where}: unknown limit {', '.join(map(repr, unknown))}; "
                                  f"the limits are {', '.join(FIELDS)} (and the option "
                                  f"{', '.join(OPTIONS)})")
        return cls(**value)
