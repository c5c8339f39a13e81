"""What the pytest plugin says about scripts: what each scripted object did (for a failed
test's report) and which scripted replies a passing test left unused.

A scripted object is one a fixture made: a ``MockModel`` (``mock_model``, and the model of a
``simulated_user`` given a script), a ``ScriptedInterface`` (``scripted_user``) or an
``OpenAIServer`` (``openai_server``), ``AnthropicServer`` (``anthropic_server``) and
``GeminiServer`` (``gemini_server``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models._script import format_conversation

Scripted = tuple[Any, str, bool]
"""(object made by a fixture, fixture name, whether its script must be used up)."""

_MODELS = ("mock_model", "simulated_user")  # fixtures whose scripted object is a MockModel
# The fake servers (their .served).
_SERVERS = ("openai_server", "anthropic_server", "gemini_server")

def _used(obj: Any, fixture: str) -> int:
    if fixture in _MODELS:
        return len(obj.calls)
    if fixture in _SERVERS:
        return int(obj.served)
    return len(obj.asked)


def _times(obj: Any, fixture: str) -> str:
    if fixture in _MODELS:
        return f"called {len(obj.calls)} times"
    if fixture in _SERVERS:
        return f"{obj.received} requests received"
    return f"asked {len(obj.asked)} times"


def _what_happened(obj: Any, fixture: str) -> str:
    if fixture in _MODELS:
        return f"the model was called {len(obj.calls)} times"
    if fixture in _SERVERS:
        return f"the server received {obj.received} requests"
    return f"the user was asked {len(obj.asked)} times"


def _describe_one(obj: Any, fixture: str, number: int) -> list[str]:
    replies = list(obj.replies)
    used = _used(obj, fixture)
    lines = [f"{fixture} #{number}: {len(replies)} replies scripted, {_times(obj, fixture)}"]
    for i, reply in enumerate(replies):
        mark = "used  " if i < used else "UNUSED"
        lines.append(f"  {mark} reply {i + 1}: {reply!r}")
    if fixture in _MODELS and obj.calls:
        lines.append(f"  call {len(obj.calls)} saw:")
        lines.append(format_conversation(obj.calls[-1].messages))
    return lines


def describe_scripts(scripted: Sequence[Scripted]) -> str:
    """What each scripted model, user and server of a test did, for a failed test's report."""
    lines: list[str] = []
    numbers: dict[str, int] = {}
    for obj, fixture, _ in scripted:
        numbers[fixture] = numbers.get(fixture, 0) + 1
        lines.extend(_describe_one(obj, fixture, numbers[fixture]))
    return "\n".join(lines)


def _checked(obj: Any, check: bool) -> bool:
    return (check and getattr(obj, "check_complete", True)
            and not getattr(obj, "repeat_last", False))


def unused_script_report(scripted: Sequence[Scripted]) -> str | None:
    """Why the scripts of a passing test were not used up, or None when they were."""
    problems: list[str] = []
    numbers: dict[str, int] = {}
    for obj, fixture, check in scripted:
        numbers[fixture] = numbers.get(fixture, 0) + 1
        if not _checked(obj, check) or not obj.remaining:
            continue
        lines = _describe_one(obj, fixture, numbers[fixture])
        lines[0] = (f"{fixture} #{numbers[fixture]}: {obj.remaining} of {len(obj.replies)} "
                    f"scripted replies were not used ({_what_happened(obj, fixture)})")
        problems.append("\n".join(lines))
    if not problems:
        return None
    return ("the conversation ended before its script did (pass check_complete=False to the "
            "factory, or set openai_server.check_complete = False, to allow this):\n"
            + "\n".join(problems))
