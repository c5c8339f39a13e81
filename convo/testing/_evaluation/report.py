"""What ``convo eval`` shows and writes: the table, the failure lines, ``--json``, JUnit XML,
and the comparison with a ``--baseline``."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .result import EvalResult
from .scenario import ScenarioError

HEADER = ("scenario", "passes", "pass rate", "model calls", "tokens")
DETAILS = {"cache_read_tokens": "cache reads", "cache_write_tokens": "cache writes",
           "reasoning_tokens": "reasoning"}
"""Columns shown only when some scenario's model reported them."""


def verdicts(results: Sequence[EvalResult], baseline: Mapping[str, float] | None = None
             ) -> dict[str, str]:
    """Why each failing scenario fails (``below min_pass_rate 100%``, ``below the baseline's
    100%``); passing scenarios are left out."""
    why: dict[str, str] = {}
    for result in results:
        if not result.passed:
            why[result.name] = f"below min_pass_rate {result.scenario.min_pass_rate:.0%}"
        elif baseline is not None and result.name in baseline \
                and result.pass_rate < baseline[result.name]:
            why[result.name] = f"below the baseline's {baseline[result.name]:.0%}"
    return why


def table(results: Sequence[EvalResult], why: Mapping[str, str]) -> str:
    """The table: a row per scenario, failing ones marked with why (and the cache and
    reasoning token columns when a model reported them)."""
    details = {r.name: r.details for r in results}
    shown = [k for k in DETAILS if any(k in d for d in details.values())]
    rows = [(*HEADER, *(DETAILS[k] for k in shown))] + [(
        r.name, f"{r.passes}/{len(r.runs)}", f"{r.pass_rate:.0%}", f"{r.mean_model_calls:.1f}",
        "-" if r.tokens is None else str(r.tokens),
        *(str(details[r.name].get(k, 0)) for k in shown),
    ) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:],
                                                                          strict=True)]
        line = "  ".join(cells)
        mark = why.get(row[0]) if row is not rows[0] else None
        lines.append(f"{line}  FAIL: {mark}" if mark else line.rstrip())
    return "\n".join(lines)


def summary(results: Sequence[EvalResult], why: Mapping[str, str]) -> str:
    runs = sum(len(r.runs) for r in results)
    failed = len(why)
    head = f"{len(results)} scenario{'s' * (len(results) != 1)}, {runs} run{'s' * (runs != 1)}"
    return f"{head}: {len(results) - failed} passed, {failed} failed"


def to_json(results: Sequence[EvalResult]) -> dict[str, Any]:
    return {"scenarios": [r.to_dict() for r in results]}


def _folders_for(path: str | os.PathLike[str]) -> Path:
    """``path``, its folders made when missing (as pytest's ``--junitxml`` does)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return Path(path)


def write_json(path: str | os.PathLike[str], results: Sequence[EvalResult]) -> None:
    _folders_for(path).write_text(json.dumps(to_json(results), indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def read_baseline(path: str | os.PathLike[str]) -> dict[str, float]:
    """Each scenario's pass rate in a ``--json`` file written before."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        rates = {str(s["name"]): float(s["pass_rate"]) for s in doc["scenarios"]}
    except OSError as exc:
        raise ScenarioError(f"--baseline {path}: cannot read it ({exc.strerror})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ScenarioError(f"--baseline {path}: expected a file written by convo eval --json "
                            f'({{"scenarios": [{{"name", "pass_rate", ...}}]}}), got '
                            f"{type(exc).__name__}: {exc}") from exc
    return rates


def _elapsed(result: EvalResult) -> float:
    return sum(r.session.outcome.elapsed_s for r in result.runs if r.session.outcome)


def junit(results: Sequence[EvalResult], why: Mapping[str, str], suite: str) -> ET.Element:
    """JUnit XML: one test case per scenario, failed when its pass rate is too low."""
    failed = sum(1 for r in results if r.name in why)
    total = sum(_elapsed(r) for r in results)
    root = ET.Element("testsuites", name="convo eval", tests=str(len(results)),
                      failures=str(failed), errors="0", time=f"{total:.3f}")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)),
                         failures=str(failed), errors="0", skipped="0", time=f"{total:.3f}")
    for result in results:
        case = ET.SubElement(node, "testcase", classname=suite, name=result.name,
                             time=f"{_elapsed(result):.3f}")
        rate = (f"{result.passes}/{len(result.runs)} runs passed ({result.pass_rate:.0%})")
        if result.name in why:
            failure = ET.SubElement(case, "failure", type="convo.eval",
                                    message=f"{rate}, {why[result.name]}")
            failure.text = "\n".join(result.lines())
        ET.SubElement(case, "system-out").text = (
            f"{rate}; mean model calls {result.mean_model_calls:.1f}")
    return root


def write_junit(path: str | os.PathLike[str], results: Sequence[EvalResult],
                why: Mapping[str, str], suite: str) -> None:
    tree = ET.ElementTree(junit(results, why, suite))
    ET.indent(tree)
    tree.write(_folders_for(path), encoding="utf-8", xml_declaration=True)
