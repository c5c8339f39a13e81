"""Scenario files: YAML, a list of scenarios or a mapping with a ``scenarios:`` list.

PyYAML (the ``eval`` extra) is imported only when a file is read. A mistake is a
``ScenarioError`` naming the file, the line (for YAML that does not parse) or the scenario.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .scenario import Scenario, ScenarioError


def parse_scenarios(doc: Any, where: str) -> list[Scenario]:
    """The scenarios of a parsed file: a list, or a mapping with a ``scenarios:`` list."""
    if isinstance(doc, Mapping):
        if set(doc) - {"scenarios"}:
            extra = ", ".join(repr(k) for k in doc if k != "scenarios")
            raise ScenarioError(f"{where}: the top level has {extra}; expected a list of "
                                "scenarios, or a mapping with only scenarios: [...]")
        doc = doc.get("scenarios")
    if not isinstance(doc, list) or not doc:
        raise ScenarioError(f"{where}: expected a non-empty list of scenarios, got {doc!r}")
    scenarios: list[Scenario] = []
    for i, item in enumerate(doc, 1):
        name = item.get("name") if isinstance(item, Mapping) else None
        at = f"{where}, scenario {i}" + (f" ({name!r})" if name else "")
        try:
            scenarios.append(Scenario.from_dict(item))
        except (ScenarioError, TypeError) as exc:
            raise ScenarioError(f"{at}: {exc}") from exc
        if name in [s.name for s in scenarios[:-1]]:
            raise ScenarioError(f"{at}: two scenarios are named {name!r}; names must differ")
    return scenarios


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """The scenarios of a YAML file (PyYAML: ``pip install -e ".[eval]"`` in the checkout)."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise ScenarioError('reading scenario files needs PyYAML: pip install -e ".[eval]" '
                            "in convo's checkout"
                            ) from exc
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario file ({exc.strerror})") from exc
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{path}{at}: not valid YAML: {problem}") from exc
    return parse_scenarios(doc, str(path))
