"""Fixtures of the tests in this folder; the guard tests' kit is guard_kit.py at the tests'
root (the served guard tests use it too)."""

from guard_kit import heard  # noqa: F401  (a fixture)
