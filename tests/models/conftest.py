"""Fixtures of the tests in this folder; the helpers they share are in models_kit.py (a module
name of its own: every folder's conftest is "conftest")."""

from models_kit import raw  # noqa: F401  (fixtures)
