"""Fixtures of the tests in this folder; the helpers they share are in mcp_kit.py (a module
name of its own: every folder's conftest is "conftest")."""

from mcp_kit import http_server, tools_server  # noqa: F401  (fixtures)
