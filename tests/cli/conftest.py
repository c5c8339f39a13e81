"""Fixtures of the tests in this folder; the helpers they share are in cli_kit.py (a module
name of its own: every folder's conftest is "conftest")."""

from cli_kit import env  # noqa: F401  (fixtures)
