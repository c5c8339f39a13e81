"""Scenarios: who the user is, what the bot must do, and how often (API.md §21).

Written in Python as ``Scenario(...)`` or read from a YAML file (``scenario_file.py``). Every
mistake (an unknown key or check, a value of the wrong kind, a regex that does not compile) is
a ``ScenarioError`` that names the key and says what was expected.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..._errors import DefinitionError
from ..._session import RunStatus

#: The checks, in the order they are made and reported.
CHECKS: Final = ("status", "tools_called", "tools_not_called", "state", "reply_matches",
                 "max_model_calls", "guard_tripped", "judge")
SCENARIO_KEYS: Final = ("name", "user", "simulated", "state", "repeat", "min_pass_rate",
                        "checks", "approvals")


class ScenarioError(DefinitionError, ValueError):
    """A scenario (in a file or in Python) is not well formed."""


def _unknown(kind: str, key: object, known: Sequence[str]) -> ScenarioError:
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ScenarioError(f"unknown {kind} {key!r}{hint}; expected one of {', '.join(known)}")


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(f"{what} must be a list of strings, got {value!r}")
    return tuple(value)


def _positive_int(value: Any, what: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScenarioError(f"{what} must be a whole number of at least {minimum}, got "
                            f"{value!r}")
    return value


@attrs.frozen(kw_only=True)
class Judge:
    """A model grades the transcript against ``rubric``: pass or fail, with a reason.

    ``model`` is a model name (an OpenAI-compatible model, built when it is first needed) or a
    convo model; ``None`` uses the evaluation's judge model.
    """

    rubric: str
    model: Any = None

    @classmethod
    def of(cls, value: Any) -> Judge:
        if isinstance(value, Judge):
            return value
        if isinstance(value, str):
            value = {"rubric": value}
        if not isinstance(value, Mapping):
            raise ScenarioError(f"checks.judge must be a mapping {{rubric, model?}}, got "
                                f"{value!r}")
        for key in value:
            if key not in ("rubric", "model"):
                raise ScenarioError(f"checks.judge: {_unknown('key', key, ('rubric', 'model'))}")
        rubric = value.get("rubric")
        if not isinstance(rubric, str) or not rubric.strip():
            raise ScenarioError(f"checks.judge.rubric must be text saying what a good "
                                f"conversation does, got {rubric!r}")
        model = value.get("model")
        if model is not None and not isinstance(model, str) \
                and not callable(getattr(model, "acomplete", None)):
            raise ScenarioError(f"checks.judge.model must be a model name or a convo model, "
                                f"got {model!r}")
        return cls(rubric=rubric, model=model)


def _tools_called(value: Any) -> tuple[str, ...]:
    return _strings(value, "checks.tools_called")


def _tools_not_called(value: Any) -> tuple[str, ...]:
    return _strings(value, "checks.tools_not_called")


def _judge(value: Any) -> Judge | None:
    return None if value is None else Judge.of(value)


def _statuses(value: Any) -> tuple[str, ...]:
    statuses = _strings(value, "checks.status")
    allowed = [s.value for s in RunStatus]
    for status in statuses:
        if status not in allowed:
            raise ScenarioError(f"checks.status: {_unknown('status', status, allowed)}")
    return statuses


def _regex(value: Any) -> re.Pattern[str] | None:
    if value is None or isinstance(value, re.Pattern):
        return value
    if not isinstance(value, str):
        raise ScenarioError(f"checks.reply_matches must be a regular expression (text), got "
                            f"{value!r}")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ScenarioError(f"checks.reply_matches {value!r} is not a regular expression: "
                            f"{exc}") from exc


@attrs.frozen(kw_only=True)
class Checks:
    """What a run must do to pass; every check left out is not made."""

    status: tuple[str, ...] = attrs.field(default=(), converter=_statuses)
    tools_called: tuple[str, ...] = attrs.field(default=(), converter=_tools_called)
    tools_not_called: tuple[str, ...] = attrs.field(default=(), converter=_tools_not_called)
    state: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    reply_matches: re.Pattern[str] | None = attrs.field(default=None, converter=_regex)
    max_model_calls: int | None = None
    #: A guard's name (it tripped at least once, a redaction included), or ``False`` (none did).
    guard_tripped: str | bool | None = None
    judge: Judge | None = attrs.field(default=None, converter=_judge)
    #: The names of the checks given, in the order of ``CHECKS`` (worked out once: runs are
    #: many).
    given: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        given = tuple(name for name in CHECKS
                      if getattr(self, name) is not None and getattr(self, name) not in ((), {}))
        object.__setattr__(self, "given", given)
        if not isinstance(self.state, Mapping):
            raise ScenarioError(f"checks.state must be a mapping of key: value, got "
                                f"{self.state!r}")
        if self.max_model_calls is not None:
            _positive_int(self.max_model_calls, "checks.max_model_calls", minimum=0)
        tripped = self.guard_tripped
        if tripped is not None and tripped is not False and (
                not isinstance(tripped, str) or not tripped.strip()):
            raise ScenarioError(f"checks.guard_tripped must be a guard's name or false, got "
                                f"{tripped!r}")

    @classmethod
    def of(cls, value: Any) -> Checks:
        if isinstance(value, Checks):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ScenarioError(f"checks must be a mapping of check: expectation, got "
                                f"{value!r}")
        for key in value:
            if key not in CHECKS:
                raise ScenarioError(f"checks: {_unknown('check', key, CHECKS)}")
        return cls(**{k: v for k, v in value.items() if v is not None})


@attrs.frozen(kw_only=True)
class Simulated:
    """A model plays the user: who it is, what it wants, and how many messages it may write.
    ``model`` (a name or a convo model) is the model that plays it; ``None``: the
    evaluation's user model."""

    goal: str
    persona: str = "a customer of this assistant"
    max_turns: int = 10
    model: Any = None

    @classmethod
    def of(cls, value: Any) -> Simulated:
        if isinstance(value, Simulated):
            return value
        if not isinstance(value, Mapping):
            raise ScenarioError(f"simulated must be a mapping {{goal, persona, max_turns}}, "
                                f"got {value!r}")
        known = ("goal", "persona", "max_turns", "model")
        for key in value:
            if key not in known:
                raise ScenarioError(f"simulated: {_unknown('key', key, known)}")
        goal = value.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            raise ScenarioError(f"simulated.goal must be text saying what the user wants, got "
                                f"{goal!r}")
        persona = value.get("persona", "a customer of this assistant")
        if not isinstance(persona, str):
            raise ScenarioError(f"simulated.persona must be text, got {persona!r}")
        turns = _positive_int(value.get("max_turns", 10), "simulated.max_turns")
        return cls(goal=goal, persona=persona, max_turns=turns, model=value.get("model"))


def _checks(value: Any) -> Checks:
    return Checks.of(value)


def _user(value: Any) -> tuple[str, ...] | None:
    return None if value is None else _strings(value, "user")


def _simulated(value: Any) -> Simulated | None:
    return None if value is None else Simulated.of(value)


def _approvals(value: Any) -> tuple[str | bool, ...]:
    if isinstance(value, str | bool) or not isinstance(value, Sequence) \
            or not all(isinstance(v, str | bool) for v in value):
        raise ScenarioError(f"approvals must be a list of answers (y, n, or a reason to "
                            f"reject), got {value!r}")
    return tuple(value)


def _min_pass_rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ScenarioError(f"min_pass_rate must be a number from 0 to 1, got {value!r}")
    return float(value)


@attrs.frozen
class Scenario:
    """One conversation to try, how often, and what it must do (see ``docs/eval.md``).

    The user's side is ``user`` (the lines it types, in order; when they run out the run ends
    ``stopped``) or ``simulated`` (a ``Simulated`` or a mapping ``{goal, persona,
    max_turns}``). ``approvals`` answer tool calls that need approval, as typed at the
    terminal (``"y"``, ``"n"`` or a reason to reject). ``checks`` is a ``Checks`` or a mapping.
    """

    name: str
    user: tuple[str, ...] | None = attrs.field(default=None, kw_only=True, converter=_user)
    simulated: Simulated | None = attrs.field(default=None, kw_only=True,
                                              converter=_simulated)
    state: Mapping[str, Any] = attrs.field(factory=dict, kw_only=True, hash=False)
    repeat: int = attrs.field(default=1, kw_only=True)
    min_pass_rate: float = attrs.field(default=1.0, kw_only=True, converter=_min_pass_rate)
    checks: Checks = attrs.field(factory=Checks, kw_only=True, converter=_checks)
    approvals: tuple[str | bool, ...] = attrs.field(default=(), kw_only=True,
                                                    converter=_approvals)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ScenarioError(f"name must be non-empty text, got {self.name!r}")
        if (self.user is None) == (self.simulated is None):
            both = "both" if self.user is not None else "neither"
            raise ScenarioError(f"scenario {self.name!r} has {both} of user: [lines] and "
                                "simulated: {goal, persona, max_turns}; give exactly one")
        if not isinstance(self.state, Mapping):
            raise ScenarioError(f"state must be a mapping, got {self.state!r}")
        _positive_int(self.repeat, "repeat")

    @classmethod
    def from_dict(cls, value: Any) -> Scenario:
        """A scenario from a mapping, as a scenario file holds it."""
        if not isinstance(value, Mapping):
            raise ScenarioError(f"a scenario must be a mapping with name, user or simulated, "
                                f"and checks; got {value!r}")
        for key in value:
            if key not in SCENARIO_KEYS:
                raise _unknown("key", key, SCENARIO_KEYS)
        if "name" not in value:
            raise ScenarioError("a scenario needs a name")
        fields = {k: v for k, v in value.items() if k != "name" and v is not None}
        return cls(value["name"], **fields)
