"""What an evaluation found: each run's failed checks, and each scenario's pass rate."""

from __future__ import annotations

from typing import Any

import attrs

from ..._reply import NO_USAGE, Usage
from ..._session import Session
from .checks import Failure
from .scenario import Scenario


@attrs.frozen(kw_only=True)
class RunResult:
    """One run of a scenario: ``index`` counts from 1; ``failures`` are ``(check, reason)``."""

    scenario: str
    index: int
    failures: tuple[Failure, ...]
    session: Session = attrs.field(eq=False, repr=False)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def model_calls(self) -> int:
        """The bot's model calls in this run (not the judge's or the simulated user's)."""
        return self.session.outcome.model_calls if self.session.outcome is not None else 0

    @property
    def tokens(self) -> int | None:
        """The bot's tokens, where its model reported them; None when it did not."""
        usage = self.session.outcome.usage if self.session.outcome is not None else None
        return usage.total_tokens if usage else None

    @property
    def usage(self) -> Usage:
        """The bot's whole usage in this run (its cache and reasoning counts too)."""
        return self.session.outcome.usage if self.session.outcome is not None else NO_USAGE

    def lines(self) -> list[str]:
        """One line per failed check: ``scenario run N: check: reason``."""
        return [f"{self.scenario} run {self.index}: {check}: {reason}"
                for check, reason in self.failures]


@attrs.frozen(kw_only=True)
class EvalResult:
    """The runs of one scenario; ``passed`` when the pass rate reaches ``min_pass_rate``."""

    scenario: Scenario
    runs: tuple[RunResult, ...]

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def passes(self) -> int:
        return sum(run.passed for run in self.runs)

    @property
    def pass_rate(self) -> float:
        return self.passes / len(self.runs) if self.runs else 0.0

    @property
    def passed(self) -> bool:
        return bool(self.runs) and self.pass_rate >= self.scenario.min_pass_rate

    @property
    def mean_model_calls(self) -> float:
        return sum(r.model_calls for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def tokens(self) -> int | None:
        """The bot's tokens over all runs; None when its model reported none."""
        known = [r.tokens for r in self.runs if r.tokens is not None]
        return sum(known) if known else None

    @property
    def details(self) -> dict[str, int]:
        """The bot's cache reads and writes and reasoning tokens over all runs, those not 0."""
        return sum((r.usage for r in self.runs), NO_USAGE).details()

    @property
    def failures(self) -> list[tuple[int, str, str]]:
        """Every failed check: ``(run index, check, reason)``."""
        return [(run.index, check, reason) for run in self.runs for check, reason in run.failures]

    def lines(self) -> list[str]:
        """The failed checks, one line each: ``scenario run N: check: reason``. A cassette
        that lacked calls (``--frozen``) is said once per scenario: the first run's
        difference, then one line naming the other runs that missed it too."""
        lines: list[str] = []
        said, missed = False, []
        for run in self.runs:
            for check, reason in run.failures:
                if check == "cassette" and said:
                    if run.index not in missed:
                        missed.append(run.index)
                    continue
                said = said or check == "cassette"
                lines.append(f"{self.name} run {run.index}: {check}: {reason}")
        if missed:
            runs = ", ".join(map(str, missed))
            lines.append(f"{self.name} run{'s' * (len(missed) > 1)} {runs}: cassette: not in "
                         "the cassette either (the first difference is above)")
        return lines

    def assert_passed(self) -> None:
        """Fail (an ``AssertionError`` listing the failed checks) unless it passed."""
        __tracebackhide__ = True
        if self.passed:
            return
        head = (f"scenario {self.name!r}: {self.passes}/{len(self.runs)} runs passed "
                f"({self.pass_rate:.0%}), below min_pass_rate {self.scenario.min_pass_rate:.0%}")
        raise AssertionError("\n".join([head, *self.lines()]))

    def to_dict(self) -> dict[str, Any]:
        """The scenario's entry in ``--json``."""
        return {
            "name": self.name, "passes": self.passes, "runs": len(self.runs),
            "pass_rate": self.pass_rate, "mean_model_calls": self.mean_model_calls,
            "tokens": self.tokens, **self.details,
            "failures": [{"run": i, "check": c, "reason": r} for i, c, r in self.failures],
        }
