"""ContextWindow: bound what a long conversation sends to the model (API.md §13).

What is sent for one model call, when the history does not fit in ``max_tokens``:

1. every system message left out of the tail, in order (instructions are never dropped);
2. with ``summarize``, one system message summarising the messages left out (_summary.py);
3. the newest user message, when the tail starts after it (it is never dropped);
4. the tail: the newest messages that fit, never starting between a tool call and its results.

The session's own history is never changed: only what is sent is chosen. Tokens are estimated
without a tokenizer (UTF-8 bytes / 4, JSON punctuation weighing more, plus a few per message)
and corrected by the usage the model reports (the ratio reported / estimated is kept per
model).

Choosing is incremental: the window keeps, per message list, running sums of the estimates and
where tool exchanges begin, extended with the messages appended since the last call, so one
choice costs O(log n) plus the copy of what is sent, not a rescan of the history.

(Just over 300 lines: the window's settings, its index and its choice belong together.)
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from ._errors import DefinitionError
from ._messages import Message
from ._parts import Audio, Image, Part, Text
from .models._overflow import context_length_hint as context_length_hint

if TYPE_CHECKING:
    from .models._base import Model

CHARS_PER_TOKEN: Final = 4
"""The starting estimate: about 4 bytes of UTF-8 text per token (docs/context.md: its error)."""
MESSAGE_OVERHEAD: Final = 4
"""Tokens a message costs besides its text (the role and the chat template's framing)."""
_CACHED_LISTS: Final = 64  # message lists whose index a window keeps (LRU)


_PUNCTUATION: Final = tuple('{}[]":,')  # JSON's marks: often a token each, not a quarter


def _size(text: str) -> int:
    """UTF-8 bytes; in text that looks like JSON or code, each JSON mark counts 3."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if '"' in text or "{" in text or "[" in text:  # prose (the common case) pays nothing
        size += 2 * sum(map(text.count, _PUNCTUATION))
    return size


def estimate_text(text: str) -> int:
    """Estimated tokens of ``text``: its UTF-8 length / 4, rounded up; in text with quotes,
    braces or brackets, each JSON punctuation mark counts three bytes."""
    return -(-_size(text) // CHARS_PER_TOKEN)


IMAGE_TOKENS: Final = 765
"""An image's estimate: OpenAI's cost of a 1024x1024 image at high detail (85 at ``low``)."""
AUDIO_BYTES_PER_TOKEN: Final = 1600  # about 20 tokens a second of 16 kHz 16-bit mono
DOCUMENT_BYTES_PER_TOKEN: Final = 16  # a PDF's bytes are mostly compressed page streams
URL_DOCUMENT_TOKENS: Final = 1000  # a file by URL: its size is unknown here


def estimate_part(part: Part) -> int:
    """Estimated tokens of one part (documented in docs/parts.md)."""
    if isinstance(part, Text):
        return estimate_text(part.text)
    if isinstance(part, Image):
        return 85 if part.detail == "low" else IMAGE_TOKENS
    if isinstance(part, Audio):
        return -(-part.size // AUDIO_BYTES_PER_TOKEN)
    if part.data is None:
        return URL_DOCUMENT_TOKENS
    return -(-part.size // DOCUMENT_BYTES_PER_TOKEN)


def estimate_message(message: Message) -> int:
    """Estimated tokens of one message as sent: its text, tool calls, ids and framing."""
    content = message.content
    tokens = MESSAGE_OVERHEAD + (estimate_text(content) if isinstance(content, str)
                                 else sum(map(estimate_part, content)))
    for call in message.tool_calls:
        tokens += 3 + estimate_text(call.id) + estimate_text(call.name) \
            + estimate_text(call.arguments_json())
    if message.tool_call_id is not None:
        tokens += estimate_text(message.tool_call_id)
    if message.name is not None:
        tokens += estimate_text(message.name)
    return tokens


def estimate_tools(tools: Sequence[Mapping[str, Any]]) -> int:
    """Estimated tokens of the tools' schemas (sent with every call that offers tools)."""
    return estimate_text(json.dumps(list(tools), ensure_ascii=False)) if tools else 0


class Index:
    """Running sums over one message list, extended as messages are appended.

    ``pre[i]``: estimated tokens of the non-system messages before ``i``; ``count[i]``: how
    many there are; ``span[i]``: the newest tool result whose call comes before ``i`` (a cut at
    ``i`` would separate them when ``span[i] >= i``); ``systems``: where system messages are.
    """

    __slots__ = ("calls", "count", "last", "n", "pre", "span", "system_tokens", "systems",
                 "user", "user_tokens")

    def __init__(self) -> None:
        self.n = 0
        self.last: Message | None = None
        self.pre = [0]
        self.count = [0]
        self.span: list[int] = []
        self.systems: list[int] = []
        self.system_tokens = 0
        self.calls: dict[str, int] = {}
        self.user = -1
        self.user_tokens = 0

    def covers(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` is the list indexed, possibly with messages appended since.

        A run only ever appends to a session's messages; a list cut short or changed at its
        end is noticed (and indexed anew), a message replaced in the middle is not.
        """
        return len(messages) >= self.n and (self.n == 0 or messages[self.n - 1] is self.last)

    def extend(self, messages: Sequence[Message]) -> None:
        pre, count, span = self.pre, self.count, self.span
        for i in range(self.n, len(messages)):
            message = messages[i]
            tokens = estimate_message(message)
            span.append(-1)
            role = message.role
            if role == "system":
                self.systems.append(i)
                self.system_tokens += tokens
                pre.append(pre[-1])
                count.append(count[-1])
                continue
            pre.append(pre[-1] + tokens)
            count.append(count[-1] + 1)
            if role == "user":
                self.user, self.user_tokens = i, tokens
            elif role == "assistant":
                for call in message.tool_calls:
                    self.calls[call.id] = i
            elif role == "tool" and message.tool_call_id is not None:
                at = self.calls.get(message.tool_call_id)
                if at is not None:
                    for j in range(at + 1, i + 1):
                        span[j] = i
        self.n = len(messages)
        self.last = messages[-1] if messages else None

    def valid(self, cut: int) -> bool:
        """Whether cutting before ``cut`` keeps every tool call with its results."""
        return cut >= self.n or self.span[cut] < cut

    def last_group(self) -> int:
        """Where the newest message's exchange starts (its tool call, for a tool result)."""
        cut = self.n - 1
        while cut > 0 and not self.valid(cut):
            cut -= 1
        return max(cut, 0)

    def cost(self, cut: int) -> int:
        """Estimated tokens of the non-system messages sent when cutting before ``cut``."""
        pinned = self.user_tokens if 0 <= self.user < cut else 0
        return self.pre[self.n] - self.pre[cut] + pinned

    def smallest_cut(self, room: int, keep_last: int | None) -> int | None:
        """The smallest valid cut whose messages fit in ``room`` (None: not even the newest)."""
        last = self.last_group()
        if self.cost(last) > room:
            return None
        lo, hi = 0, last
        while lo < hi:  # the cost only falls as the cut moves on
            mid = (lo + hi) // 2
            if self.cost(mid) <= room:
                hi = mid
            else:
                lo = mid + 1
        if keep_last is not None:
            total = self.count[self.n]
            lo = max(lo, bisect_left(self.count, total - keep_last, lo, last + 1))
        while lo < last and not self.valid(lo):
            lo = self.span[lo] + 1
        return min(lo, last)

    def sent(self, messages: Sequence[Message], cut: int,
             summary: Message | None = None) -> list[Message]:
        """What is sent when cutting before ``cut``: system messages, summary, pin, tail."""
        out = [messages[i] for i in self.systems[:bisect_left(self.systems, cut)]]
        if summary is not None:
            out.append(summary)
        if 0 <= self.user < cut:
            out.append(messages[self.user])
        out.extend(messages[cut:])
        return out


def _positive(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name == "keep_last":
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"ContextWindow({attribute.name}=...) must be a whole number "
                              f">= 1, got {value!r}")


def check_window(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: ``value`` is a ContextWindow or None."""
    if value is not None and not isinstance(value, ContextWindow):
        raise DefinitionError(f"{type(instance).__name__}: {attribute.name} must be a "
                              f"ContextWindow or None, got {type(value).__name__}")


def _model_or_none(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(getattr(value, "complete", None)):
        raise DefinitionError(f"ContextWindow(summary_model=...) must be a Model "
                              f"(complete/acomplete) or None, got {type(value).__name__}")


def model_key(model: Model | None) -> str:
    """Whose token ratio a model uses: its name when it has one, else the object."""
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else f"{type(model).__name__}@{id(model):x}"


@attrs.frozen(slots=False)
class ContextWindow:
    """Bounds what is sent to the model: at most ``max_tokens`` (estimated) per call.

    ``keep_last``: send at most this many of the newest messages (besides system messages,
    the summary and the newest user message), even when more would fit. ``summarize``: say
    what was left out in one system message, written by ``summary_model`` (default: the
    call's own model), made once per cut and kept in ``session.state["convo.context"]``.
    See docs/context.md.
    """

    max_tokens: int = attrs.field(validator=_positive)
    keep_last: int | None = attrs.field(default=None, kw_only=True, validator=_positive)
    summarize: bool = attrs.field(default=False, kw_only=True)
    summary_model: Model | None = attrs.field(default=None, kw_only=True,
                                              validator=_model_or_none)
    _indexes: OrderedDict[int, Index] = attrs.field(init=False, factory=OrderedDict,
                                                    eq=False, repr=False)
    _ratios: dict[str, float] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock, eq=False,
                                        repr=False)
    _tools: dict[int, tuple[Sequence[Mapping[str, Any]], int]] = attrs.field(
        init=False, factory=dict, eq=False, repr=False)

    def index(self, messages: Sequence[Message]) -> Index:
        """The running sums of ``messages``, brought up to date (see ``Index``)."""
        key = id(messages)
        with self._lock:
            index = self._indexes.get(key)
            if index is None or not index.covers(messages):
                index = Index()
                self._indexes[key] = index
                if len(self._indexes) > _CACHED_LISTS:
                    self._indexes.popitem(last=False)
            else:
                self._indexes.move_to_end(key)
            index.extend(messages)
        return index

    def tools_tokens(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """``estimate_tools(tools)``, kept per schema list (a template's stays the same)."""
        known = self._tools.get(id(tools))
        if known is not None and known[0] is tools:
            return known[1]
        tokens = estimate_tools(tools)
        if len(self._tools) >= _CACHED_LISTS:
            self._tools.clear()
        self._tools[id(tools)] = (tools, tokens)
        return tokens

    def ratio(self, model: Model | None) -> float:
        """Reported tokens per estimated token for ``model`` (1.0 until it reports usage)."""
        return self._ratios.get(model_key(model), 1.0)

    def observe(self, model: Model | None, estimated: int, reply: Message) -> None:
        """Correct the estimate with the prompt tokens ``reply`` reports, if it does."""
        usage = reply.usage
        prompt = 0 if usage is None else usage.prompt_tokens
        if prompt > 0 and estimated > 0:
            self._ratios[model_key(model)] = min(10.0, max(0.1, prompt / estimated))

    def estimate(self, messages: Sequence[Message], model: Model | None = None) -> int:
        """Estimated tokens of ``messages``, corrected for ``model`` when it has reported."""
        raw = sum(estimate_message(m) for m in messages)
        return round(raw * self.ratio(model))

