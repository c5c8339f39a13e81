"""End-to-end suites: the real `convo` command in a pseudo-terminal, real `convo serve`
processes killed and restarted, the chat page in Chromium. They are marked ``e2e``: run them
alone with ``pytest -m e2e``, or leave them out with ``pytest -m "not e2e"``."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
