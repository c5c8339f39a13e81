"""Fixtures of the tests in this folder; the helpers they share are in otel_kit.py (a module
name of its own: every folder's conftest is "conftest")."""

from otel_kit import otel, served  # noqa: F401  (fixtures)
