"""Shared by the tests of convo's pytest plugin in this folder (a module name of its own:
every folder's conftest is "conftest")."""

from __future__ import annotations

import pytest


def fails_saying(pytester: pytest.Pytester, lines: list[str]) -> pytest.RunResult:
    """Run the test file made in ``pytester``: it fails once, its output matching ``lines``
    (``fnmatch`` patterns, in order)."""
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lines)
    return result
