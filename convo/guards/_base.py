"""Guard and ModelGuard: rules a run applies to user messages, replies, tool calls and results.

A guard is a value (frozen attrs): where it looks (``on``), what it does when it trips
(``action``), what the user is told (``message``) and how a streamed reply waits for it
(``stream``). Templates ask for their values to be checked (``convo._requests.CheckGuards``);
the live answerer runs the run's guards and the turn's here (``check`` / ``acheck``), and a
replay answers from what was stored, so a guard never runs twice for one stored value.

What ``check(value, ctx)`` returns (API.md §27): ``True`` passes, ``False`` or a string trips
(the string is the reason); for ``action="redact"`` any value other than ``True`` or the
original is the redaction (``False`` or an exception acts as ``block``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from .._messages import Message, ToolCall
    from .._session import Session
    from ..models._base import Model

logger = logging.getLogger("convo.guards")

ON: Final = ("input", "output", "tool_call", "tool_result")
ACTIONS: Final = ("block", "end", "redact")
STREAMS: Final = ("hold", "live")
DEFAULT_MESSAGE: Final = "Sorry, I can't help with that."
BLOCKED: Final = ("block", "end")
# In ``Session._guards_on``: the run's output guards are all plain functions, checked by the
# run's pump where a model's reply comes in (``convo._run.guarding.at_call``); a template asks
# for a model's reply to be checked only for output guards of its own.
AT_CALL: Final = "output at the call"


class GuardEnded(Exception):
    """A guard with ``action="end"`` tripped: the run ends with status ``guarded``."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.reply = reply


@attrs.frozen(slots=True)
class GuardContext:
    """What a check may look at besides the value: the conversation, its state, where the
    value is (``scope``, as ``MessageAdded.scope``) and, for a tool's value, its ``call``."""

    session: Session
    state: Mapping[str, Any]
    scope: tuple[str, ...] = ()
    call: ToolCall | None = None


def _choice(options: tuple[str, ...], what: str) -> Callable[[Any, Any, Any], None]:
    def check(_: Any, __: Any, value: Any) -> None:
        if value not in options:
            raise ValueError(f"Guard: {what} must be one of {', '.join(map(repr, options))}; "
                             f"got {value!r}")
    return check


@attrs.frozen(slots=True, eq=False)
class _Rule:
    on: str = attrs.field(kw_only=True, validator=_choice(ON, "on"))
    action: str = attrs.field(default="block", kw_only=True, validator=_choice(ACTIONS, "action"))
    message: str | None = attrs.field(default=None, kw_only=True)
    name: str | None = attrs.field(default=None, kw_only=True)
    stream: str = attrs.field(default="hold", kw_only=True, validator=_choice(STREAMS, "stream"))
    # A plain function's check, answered inside the run's pump (no ``await``, no judge).
    inline: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def reply(self) -> str:
        """What the user is told when it blocks or ends."""
        return self.message if self.message is not None else DEFAULT_MESSAGE

    @property
    def label(self) -> str:
        return self.name or "guard"

    def judge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        """The check's result, blocking, and the verdict to record (a ``ModelGuard``'s)."""
        raise NotImplementedError

    async def ajudge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        return self.judge(value, ctx)


@attrs.frozen(slots=True, eq=False)
class Guard(_Rule):
    """A rule on ``on`` (input, output, tool_call, tool_result): ``check(value, ctx)``, sync or
    async, passes, trips (block / end) or redacts (API.md §27)."""

    check: Callable[..., Any] = attrs.field()

    def __attrs_post_init__(self) -> None:
        if not callable(self.check):
            raise TypeError(f"Guard: check must be a function check(value, ctx), got "
                            f"{self.check!r}")
        if self.name is None:
            object.__setattr__(self, "name", getattr(self.check, "__name__", "guard"))
        object.__setattr__(self, "inline", not _is_async(self.check))

    def judge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        result = self.check(value, ctx)
        if result is not True and inspect.isawaitable(result):  # an async check under run()
            result = _run_sync(result)
        return result, None

    async def ajudge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        result = self.check(value, ctx)
        if result is not True and inspect.isawaitable(result):
            result = await result
        return result, None


def _is_async(check: Callable[..., Any]) -> bool:
    """An ``async def`` check (a function, a partial of one, an object whose ``__call__`` is)."""
    return inspect.iscoroutinefunction(check) or \
        inspect.iscoroutinefunction(type(check).__call__)


async def _awaited(result: Any) -> Any:
    return await result


def _run_sync(result: Any) -> Any:
    """Await ``result`` from blocking code: on a fresh loop, in a thread of its own when this
    thread already runs one."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(result))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _awaited(result)).result()


JUDGE_PROMPT: Final = (
    "You check one {what} of a conversation against a rule.\n\nRule:\n{rubric}\n\n"
    "The {what}:\n{value}\n\nAnswer with only a JSON object: "
    '{{"pass": true or false, "reason": "one sentence saying why"}}.')
_WHAT: Final = {"input": "user message", "output": "assistant reply",
                "tool_call": "tool call", "tool_result": "tool result"}


@attrs.frozen(slots=True, eq=False)
class ModelGuard(_Rule):
    """A rule a model judges: ``model`` is sent ``rubric`` and the value (one user message, no
    tools) and answers ``{"pass": …, "reason": …}``. Its verdict is recorded with the message
    it judged, so a resume or a rebuild never asks the model again."""

    model: Model = attrs.field()
    rubric: str = attrs.field()

    def __attrs_post_init__(self) -> None:
        if not callable(getattr(self.model, "complete", None)):
            raise TypeError(f"ModelGuard: model must implement the Model protocol, got "
                            f"{type(self.model).__name__}")
        if self.name is None:
            object.__setattr__(self, "name", "model_guard")

    def ask(self, value: Any, ctx: GuardContext) -> list[Message]:
        from .._messages import Message

        shown = value if isinstance(value, str) else _call_text(value, ctx.call)
        return [Message("user", JUDGE_PROMPT.format(what=_WHAT[self.on], rubric=self.rubric,
                                                    value=shown))]

    def judge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        try:
            reply = self.model.complete(self.ask(value, ctx))
        except Exception as exc:
            return _read(None, exc)
        return _read(reply.text, None)

    async def ajudge(self, value: Any, ctx: GuardContext) -> tuple[Any, dict[str, Any] | None]:
        try:
            reply = await self.model.acomplete(self.ask(value, ctx))
        except Exception as exc:
            return _read(None, exc)
        return _read(reply.text, None)


def _call_text(arguments: Any, call: ToolCall | None) -> str:
    import json

    name = call.name if call is not None else "tool"
    return f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


_WORD: Final = r"^\W*(PASS|FAIL)\b\W*(.*)"  # a reply that starts with PASS or FAIL


def _short(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def verdict(reply: str) -> tuple[bool, str]:
    """``(passed, reason)`` from a judge's reply (a ``ModelGuard``'s, the test kit's judge's);
    an unreadable reply fails."""
    import json
    import re

    found = re.search(r"\{.*\}", reply, re.DOTALL)
    if found is not None:
        try:
            doc: Any = json.loads(found.group(0))
        except json.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("pass"), bool):
            return doc["pass"], str(doc.get("reason") or "(no reason given)").strip()
    word = re.match(_WORD, reply, re.IGNORECASE | re.DOTALL)
    if word is not None:
        return word.group(1).upper() == "PASS", word.group(2).strip() or "(no reason given)"
    return False, (f'the judge\'s reply is not a verdict (expected {{"pass": true|false, '
                   f'"reason": ...}}): {_short(reply)}')


def _read(text: str | None, failure: Exception | None) -> tuple[Any, dict[str, Any]]:
    """The result of a judge's reply (a redacting ModelGuard can only pass or block)."""
    if failure is not None:
        reason = f"the guard's model failed: {type(failure).__name__}: {failure}"
        return reason, {"pass": False, "reason": reason}
    passed, reason = verdict(text or "")
    return (True if passed else reason), {"pass": passed, "reason": reason}


AnyGuard = Guard | ModelGuard


def as_guards(value: Iterable[AnyGuard]) -> tuple[AnyGuard, ...]:
    """A list of guards as a tuple (a template's or a runner's ``guards=``)."""
    return tuple(value)


def check_names(guards: Sequence[Any], where: str) -> tuple[AnyGuard, ...]:
    """The guards of a list, checked: each a ``Guard``/``ModelGuard``, no two with one name."""
    seen: set[str] = set()
    for guard in guards:
        if not isinstance(guard, _Rule):
            raise TypeError(f"{where}: guards must be Guard or ModelGuard values, got "
                            f"{guard!r}")
        if guard.label in seen:
            raise ValueError(f"{where}: two guards are named {guard.label!r}; give each guard "
                             "of a list its own name=")
        seen.add(guard.label)
    return tuple(guards)


@attrs.frozen(slots=True)
class Trip:
    """A guard that tripped: its name, its action, why."""

    name: str
    action: str
    reason: str

    def mark(self) -> dict[str, Any]:
        return {"name": self.name, "action": self.action, "reason": self.reason}


@attrs.frozen(slots=True)
class Checked:
    """The answer to ``CheckGuards`` when anything changed (``None`` answers "unchanged").

    ``message``: the message to keep (input, output); ``value``: what goes on (tool_call,
    tool_result); ``mark``: ``metadata["guard"]`` for it; ``reply``: the blocking guard's
    message; ``trips``: every guard that tripped (for the events)."""

    value: Any = None
    mark: Mapping[str, Any] | None = None
    reply: str | None = None
    message: Message | None = None
    trips: tuple[Trip, ...] = ()

    @property
    def blocked(self) -> bool:
        return self.mark is not None and self.mark.get("action") in BLOCKED

    @property
    def ends(self) -> bool:
        return self.mark is not None and self.mark.get("action") == "end"


def _outcome(guard: AnyGuard, value: Any, result: Any) -> tuple[str, Any, str]:
    """``("pass"|"redact"|"trip", value, reason)`` from one check's result."""
    if result is True:
        return "pass", value, ""
    if guard.action == "redact":
        if result is False:
            return "trip", value, guard.label
        if result is None:
            return "trip", value, _none(guard)
        if result == value:
            return "pass", value, ""
        return "redact", result, "redacted"
    if result is False:
        return "trip", value, guard.label
    if isinstance(result, str):
        return "trip", value, result
    return "trip", value, _none(guard) if result is None else \
        f"{guard.label} returned {result!r}; a check returns True, False or a reason"


def _none(guard: AnyGuard) -> str:
    return f"{guard.label} returned None; a check returns True, False or a reason"


def _failed(guard: AnyGuard, exc: Exception) -> tuple[Any, None]:
    logger.warning("guard %r raised; it trips", guard.label, exc_info=exc)
    return (str(exc) or type(exc).__name__), None


def check(guards: Sequence[AnyGuard], value: Any, ctx: GuardContext | None
          ) -> Checked | None:
    """Run ``guards`` in order on ``value``, blocking; ``None`` when nothing changed. (``ctx``
    is ``None`` only for guards whose checks read none: ``convo.guards._plan.CONTEXTLESS``.)"""
    steps: list[tuple[AnyGuard, Any, Any]] = []
    for guard in guards:
        try:
            if guard.inline:  # a plain function: called here (``judge``, without a call)
                result = guard.check(value, ctx)  # type: ignore[union-attr]
                if result is True:
                    continue  # passed, nothing to record: the common case
                verdict = None
                if inspect.isawaitable(result):
                    result = _run_sync(result)
            else:
                assert ctx is not None  # (a judge's guard reads its context)
                result, verdict = guard.judge(value, ctx)
        except Exception as exc:
            result, verdict = _failed(guard, exc)
        if result is True and verdict is None:
            continue  # passed, nothing to record
        steps.append((guard, result, verdict))
        value, stop = _step(steps, value)
        if stop:
            break
    return _summed(steps, value) if steps else None


async def acheck(guards: Sequence[AnyGuard], value: Any, ctx: GuardContext) -> Checked | None:
    """``check`` on the running loop (async checks awaited there)."""
    steps = []
    for guard in guards:
        try:
            result, verdict = await guard.ajudge(value, ctx)
        except Exception as exc:
            result, verdict = _failed(guard, exc)
        if result is True and verdict is None:
            continue  # passed, nothing to record: the common case
        steps.append((guard, result, verdict))
        value, stop = _step(steps, value)
        if stop:
            break
    return _summed(steps, value) if steps else None


def _step(steps: list[tuple[AnyGuard, Any, Any]], value: Any) -> tuple[Any, bool]:
    guard, result, verdict = steps[-1]
    kind, new, reason = _outcome(guard, value, result)
    steps[-1] = (guard, (kind, reason), verdict)
    if kind == "redact":
        return new, False
    return value, kind == "trip"


def _summed(steps: list[tuple[AnyGuard, Any, Any]], value: Any) -> Checked | None:
    trips: list[Trip] = []
    verdicts: dict[str, Any] = {}
    mark: dict[str, Any] | None = None
    reply = None
    for guard, (kind, reason), verdict in steps:
        if verdict is not None:
            verdicts[guard.label] = verdict
        if kind == "redact":
            trips.append(Trip(guard.label, "redact", "redacted"))
            if mark is None:
                mark = trips[-1].mark()
        elif kind == "trip":
            action = "block" if guard.action == "redact" else guard.action
            trips.append(Trip(guard.label, action, reason))
            mark, reply = trips[-1].mark(), guard.reply
    if not trips and not verdicts:
        return None
    if verdicts:
        mark = {**(mark or {}), "verdicts": verdicts}
    return Checked(value=value, mark=mark, reply=reply, trips=tuple(trips))
