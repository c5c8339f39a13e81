"""The deterministic checks of a scenario: each gives ``None`` (passed) or a reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..._session import RunStatus, Session
from .scenario import Checks

Failure = tuple[str, str]  # (check, reason)


def tools_called(session: Session) -> list[str]:
    """The names of the tools the bot's model called, in order (approved or not)."""
    return [call.name for m in session.messages if m.role == "assistant"
            for call in m.tool_calls]


def last_reply(session: Session) -> str | None:
    """The content of the last assistant message that has text."""
    for message in reversed(session.messages):
        if message.role == "assistant" and message.text:
            return message.text
    return None


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _called(names: list[str]) -> str:
    return ", ".join(names) if names else "no tools"


def _status(checks: Checks, session: Session) -> str | None:
    outcome = session.outcome
    status = outcome.status.value if outcome is not None else "(no outcome)"
    if status in checks.status:
        return None
    expected = " or ".join(checks.status)
    why = f" ({outcome.describe()})" if outcome is not None else ""
    return f"expected {expected}, the run ended {status}{why}"


def _tools_called(checks: Checks, session: Session) -> str | None:
    called = tools_called(session)
    position = 0
    for i, name in enumerate(checks.tools_called):
        try:
            position = called.index(name, position) + 1
        except ValueError:
            if len(checks.tools_called) == 1:
                return f"expected a call to {name}; there was none (called: {_called(called)})"
            after = f" after {checks.tools_called[i - 1]}" if i else ""
            return (f"expected {' then '.join(checks.tools_called)} in this order; {name} was "
                    f"not called{after} (called: {_called(called)})")
    return None


def _tools_not_called(checks: Checks, session: Session) -> str | None:
    called = tools_called(session)
    wrong = [f"{n} ({called.count(n)}x)" for n in checks.tools_not_called if n in called]
    if not wrong:
        return None
    return f"called {', '.join(wrong)}, which it must not (called: {_called(called)})"


def _state(checks: Checks, session: Session) -> str | None:
    wrong = []
    for key, expected in checks.state.items():
        if key not in session.state:
            wrong.append(f"{key} is missing (expected {expected!r})")
        elif session.state[key] != expected:
            wrong.append(f"{key} is {session.state[key]!r}, expected {expected!r}")
    return "; ".join(wrong) or None


def _reply_matches(checks: Checks, session: Session) -> str | None:
    assert checks.reply_matches is not None
    reply = last_reply(session)
    pattern = checks.reply_matches.pattern
    if reply is None:
        return f"expected a reply matching {pattern!r}; the bot wrote no reply"
    if checks.reply_matches.search(reply):
        return None
    return f"{pattern!r} not found in the last reply {_short(reply)}"


def _max_model_calls(checks: Checks, session: Session) -> str | None:
    calls = session.outcome.model_calls if session.outcome is not None else 0
    if checks.max_model_calls is None or calls <= checks.max_model_calls:
        return None
    return f"the bot made {calls} model calls, more than {checks.max_model_calls}"


def guards_tripped(session: Session) -> list[str]:
    """The names of the guards that tripped in the run (a redaction counts), in order."""
    names = []
    for message in session.messages:
        mark = message.metadata.get("guard")
        if isinstance(mark, dict) and mark.get("action") and mark.get("name") not in names:
            names.append(str(mark.get("name")))
    return names


def _guard_tripped(checks: Checks, session: Session) -> str | None:
    tripped = guards_tripped(session)
    if checks.guard_tripped is False:
        return None if not tripped else f"expected no guard to trip; {', '.join(tripped)} did"
    if checks.guard_tripped in tripped:
        return None
    return (f"expected guard {checks.guard_tripped} to trip; "
            f"{', '.join(tripped) + ' did' if tripped else 'none did'}")


_CHECKS: Final[dict[str, Callable[[Checks, Session], str | None]]] = {
    "status": _status,
    "tools_called": _tools_called,
    "tools_not_called": _tools_not_called,
    "state": _state,
    "reply_matches": _reply_matches,
    "max_model_calls": _max_model_calls,
    "guard_tripped": _guard_tripped,
}


def crashed(checks: Checks, session: Session) -> list[Failure]:
    """A run that ended with status ``error`` fails, even when no check asks about its status
    (with a ``status`` check, that check says so)."""
    outcome = session.outcome
    if checks.status or outcome is None or outcome.status != RunStatus.ERROR:
        return []
    return [("error", f"the run ended with an error: {outcome.error}")]


def check_run(checks: Checks, session: Session) -> list[Failure]:
    """The deterministic checks a run failed, in the order of ``CHECKS``, with reasons."""
    failures = crashed(checks, session)
    for name in checks.given:
        check = _CHECKS.get(name)
        reason = check(checks, session) if check is not None else None
        if reason is not None:
            failures.append((name, reason))
    return failures
