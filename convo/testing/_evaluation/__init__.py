"""Evaluations (API.md §21): scenarios run against a bot, checked, judged, with pass rates.

- ``scenario.py``: ``Scenario``, its ``Checks``, ``Simulated`` user and ``Judge``;
  ``scenario_file.py``: reading them from YAML;
- ``checks.py``: the deterministic checks; ``judge.py``: the model judge;
- ``evaluate.py``: running the scenarios (``evaluate``, ``aevaluate``, ``aevaluate_all``);
- ``result.py``: ``EvalResult`` and ``RunResult``; ``report.py``: table, JSON, JUnit, baseline;
- ``cassette.py``: recording and replaying the model calls (the command is ``convo.cli._eval``).
"""

from .cassette import Cassette, CassetteMiss
from .evaluate import aevaluate, aevaluate_all, evaluate
from .result import EvalResult, RunResult
from .scenario import Checks, Judge, Scenario, ScenarioError, Simulated
from .scenario_file import load_scenarios, parse_scenarios

__all__ = ["Cassette", "CassetteMiss", "Checks", "EvalResult", "Judge", "RunResult",
           "Scenario", "ScenarioError", "Simulated", "aevaluate", "aevaluate_all", "evaluate",
           "load_scenarios", "parse_scenarios"]
