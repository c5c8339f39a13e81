"""Fixtures of the tests in this folder; the helpers they share are in serve_kit.py (a module
name of its own: every folder's conftest is "conftest")."""

from serve_kit import postgres, store_url  # noqa: F401  (fixtures)
