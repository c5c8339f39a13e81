"""Fixtures of the tests in this folder (and faults/); the helpers they share are in
serve_kit.py (a module name of its own: every folder's conftest is "conftest")."""

from serve_kit import browser  # noqa: F401  (fixtures)
from serve_kit import calls  # noqa: F401  (fixtures)
from serve_kit import entered  # noqa: F401  (fixtures)
from serve_kit import folder  # noqa: F401  (fixtures)
from serve_kit import page  # noqa: F401  (fixtures)
from serve_kit import postgres  # noqa: F401  (fixtures)
from serve_kit import serve  # noqa: F401  (fixtures)
from serve_kit import store_url  # noqa: F401  (fixtures)
from serve_kit import until  # noqa: F401  (fixtures)
