"""What a model's reply says of itself, typed: how it finished (``Finish``), what it cost
(``Usage``), its reasoning items, its refusal, and the rest its provider said.

A reply is an assistant ``Message``; these facts are stored in its ``metadata`` under the
keys below (``finish_reason``, ``usage``, ``refusal``, ``reasoning``, ``cancelled``), as
transcripts and stores have always kept them. This module is the one place that knows those
keys: ``Message.finish``, ``.usage``, ``.reasoning``, ``.refusal`` and ``.provider`` read
them here, and ``Message.assistant(...)`` writes them from typed values. A provider maps its
own words to these facts in its own room (``convo.models._openai``); the core reads only the
typed properties. Tool messages' facts (``error``, ``rejected``, ``terminated``) are read here
too.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

FINISH_KEY: Final = "finish_reason"
USAGE_KEY: Final = "usage"
REFUSAL_KEY: Final = "refusal"
REASONING_KEY: Final = "reasoning"
CANCELLED_KEY: Final = "cancelled"
REPLY_KEYS: Final = frozenset({FINISH_KEY, USAGE_KEY, REFUSAL_KEY, REASONING_KEY,
                               CANCELLED_KEY})
"""The keys of an assistant message's metadata that are typed facts (not ``provider``)."""

ERROR_KEY: Final = "error"
REJECTED_KEY: Final = "rejected"
TERMINATED_KEY: Final = "terminated"

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


class Finish(enum.StrEnum):
    """How a reply finished, in no provider's words."""

    STOP = "stop"  # the model said all it had to say
    LENGTH = "length"  # cut off at the token limit (``max_tokens``)
    TOOL_CALLS = "tool_calls"  # it called tools
    CANCELLED = "cancelled"  # a cancel (Ctrl-C, a served cancel) cut it off
    REFUSED = "refused"  # the model (or its provider's filter) refused

    def __str__(self) -> str:
        return self.value


# The words a stored ``finish_reason`` may hold: the neutral ones, and those of transcripts
# written before the words were neutral (Chat Completions').
_FINISHES: Final[Mapping[str, Finish]] = {
    **{f.value: f for f in Finish},
    "content_filter": Finish.REFUSED,
    "function_call": Finish.TOOL_CALLS,
}


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else 0


@attrs.frozen(slots=True)
class Usage:
    """Tokens, where the model reports them; adds up over a run.

    ``prompt_tokens`` is all the input (cache reads and writes included) and
    ``completion_tokens`` all the output (reasoning included); ``cache_read_tokens``,
    ``cache_write_tokens`` and ``reasoning_tokens`` say how much of it was which (0 when not
    reported). ``unreported`` counts the model calls whose usage was not reported (a stream
    without a usage chunk, a test model): their tokens are unknown, not zero, and ``known`` is
    false.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    unreported: int = 0
    cache_read_tokens: int = attrs.field(default=0, kw_only=True)
    cache_write_tokens: int = attrs.field(default=0, kw_only=True)
    reasoning_tokens: int = attrs.field(default=0, kw_only=True)

    def __add__(self, other: Usage) -> Usage:
        if other is NO_USAGE:
            return self
        if self is NO_USAGE:
            return other
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.unreported + other.unreported,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    def __bool__(self) -> bool:
        return bool(self.prompt_tokens or self.completion_tokens or self.total_tokens)

    @property
    def known(self) -> bool:
        """Whether every call counted here reported its tokens."""
        return not self.unreported

    def details(self) -> dict[str, int]:
        """The cache and reasoning counts that are not 0 (what ``to_dict`` adds)."""
        found = {"cache_read_tokens": self.cache_read_tokens,
                 "cache_write_tokens": self.cache_write_tokens,
                 "reasoning_tokens": self.reasoning_tokens}
        return {k: v for k, v in found.items() if v}

    def reported(self) -> dict[str, int]:
        """One reply's usage as its message stores it (``metadata["usage"]``)."""
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens} | self.details()

    def to_dict(self) -> dict[str, Any]:
        """As ``Outcome``s and summary records store it: the counts 0 by default are left out
        when 0, so what was written before they existed is written the same."""
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "unreported": self.unreported} | self.details()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Usage:
        if not d:
            return NO_USAGE
        return cls(
            int(d.get("prompt_tokens") or 0),
            int(d.get("completion_tokens") or 0),
            int(d.get("total_tokens") or 0),
            int(d.get("unreported") or 0),
            cache_read_tokens=int(d.get("cache_read_tokens") or 0),
            cache_write_tokens=int(d.get("cache_write_tokens") or 0),
            reasoning_tokens=int(d.get("reasoning_tokens") or 0),
        )


NO_USAGE: Final = Usage()
UNREPORTED: Final = Usage(unreported=1)  # one model call that did not say what it used


# -- reading the stored keys (``Message``'s properties call these) ---------------------------

def finish_of(metadata: Mapping[str, Any]) -> Finish | None:
    """How the reply finished: a cancel, else its stored word, else a refusal; ``None`` when
    none is said (or the word is one convo does not know)."""
    if not metadata:
        return None
    if metadata.get(CANCELLED_KEY):
        return Finish.CANCELLED
    word = metadata.get(FINISH_KEY)
    if isinstance(word, str):
        return _FINISHES.get(word)
    return Finish.REFUSED if metadata.get(REFUSAL_KEY) else None


def usage_of(metadata: Mapping[str, Any]) -> Usage | None:
    """The reply's reported usage; ``None`` when it reported none."""
    stored = metadata.get(USAGE_KEY) if metadata else None
    if not stored or not isinstance(stored, Mapping):
        return None
    return Usage(
        _count(stored.get("prompt_tokens")), _count(stored.get("completion_tokens")),
        _count(stored.get("total_tokens")), _count(stored.get("unreported")),
        cache_read_tokens=_count(stored.get("cache_read_tokens")),
        cache_write_tokens=_count(stored.get("cache_write_tokens")),
        reasoning_tokens=_count(stored.get("reasoning_tokens")),
    )


def reasoning_of(metadata: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The reply's reasoning items, as its provider sent them (to be sent back)."""
    items = metadata.get(REASONING_KEY) if metadata else None
    if not isinstance(items, list | tuple):
        return ()
    return tuple(item for item in items if isinstance(item, Mapping))


def _texts(value: Any) -> list[str]:
    """The ``text`` of each part in a list of parts (an OpenAI reasoning item's summary)."""
    if not isinstance(value, list | tuple):
        return []
    return [str(p["text"]) for p in value if isinstance(p, Mapping) and isinstance(
        p.get("text"), str)]


def reasoning_text(metadata: Mapping[str, Any]) -> str:
    """What a front end would show of the reply's reasoning: the readable text of its items
    (an OpenAI reasoning item's summaries and reasoning text, an Anthropic thinking block's
    thinking, a Gemini thought's text), joined by blank lines; encrypted or redacted items
    have none."""
    texts: list[str] = []
    for item in reasoning_of(metadata):
        texts += _texts(item.get("summary")) + _texts(item.get("content"))
        if isinstance(item.get("thinking"), str):
            texts.append(item["thinking"])
        part = item.get("part")
        if isinstance(part, Mapping) and part.get("thought") and isinstance(part.get("text"),
                                                                            str):
            texts.append(part["text"])
    return "\n\n".join(t for t in texts if t)


def refusal_of(metadata: Mapping[str, Any]) -> str | None:
    refusal = metadata.get(REFUSAL_KEY) if metadata else None
    return refusal if isinstance(refusal, str) and refusal else None


def provider_of(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """The metadata that is not a typed fact: what only the reply's provider knows."""
    if not metadata or not REPLY_KEYS.intersection(metadata):
        return metadata or _EMPTY
    return MappingProxyType({k: v for k, v in metadata.items() if k not in REPLY_KEYS})


def terminated_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    saved = metadata.get(TERMINATED_KEY) if metadata else None
    return saved if isinstance(saved, Mapping) else None


# -- writing them -----------------------------------------------------------------------------

def reply_metadata(*, finish: Finish | str | None = None, usage: Usage | None = None,
                   reasoning: Any = None, refusal: str | None = None,
                   provider: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metadata of an assistant message with these facts (``Message.assistant``)."""
    metadata: dict[str, Any] = {}
    finish = Finish(finish) if finish is not None else None
    if finish is Finish.CANCELLED:
        metadata[CANCELLED_KEY] = True
    elif finish is not None:
        metadata[FINISH_KEY] = finish.value
    if refusal or finish is Finish.REFUSED:
        metadata[REFUSAL_KEY] = refusal or "refused"
    if usage is not None:
        metadata[USAGE_KEY] = usage.reported()
    if reasoning:
        metadata[REASONING_KEY] = [dict(item) for item in reasoning]
    if provider:
        clash = sorted(REPLY_KEYS.intersection(provider))
        if clash:
            raise ValueError(f"provider= holds {', '.join(map(repr, clash))}: give "
                             "finish=, usage=, reasoning= or refusal= instead")
        metadata.update(provider)
    return metadata
