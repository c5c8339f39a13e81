"""Fixtures of the tests in this folder (and faults/); the helpers they share are in
serve_kit.py (a module name of its own: every folder's conftest is "conftest")."""

from guard_kit import heard  # noqa: F401  (a fixture)
from serve_kit import (  # noqa: F401  (fixtures)
    browser,
    calls,
    entered,
    folder,
    page,
    postgres,
    serve,
    store_url,
    until,
)
