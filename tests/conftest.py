"""Shared test configuration: pytester for the plugin tests, ``provider_model`` (the
model-independent tests on every provider's fake; the kit is ``provider_fakes.py``), and the
line at the end of a run whose real-model suite (tests/real) could not run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from provider_fakes import PROVIDERS, FakeProvider, provider_fake

pytest_plugins = ["pytester"]


@pytest.fixture(params=list(PROVIDERS))
def provider_model(request: pytest.FixtureRequest) -> Iterator[FakeProvider]:
    """A factory: ``provider_model(replies, **kw)`` -> a model of the parametrized provider
    on its wire-level fake, scripted like ``mock_model``."""
    fake = provider_fake(request)
    try:
        yield fake
    finally:
        fake.close()


REAL_SKIPPED = "no real model: "  # (tests/real/conftest.py's skip reason starts so)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it out loud when the real-model suite could not run (never a silent skip). Read from
    the skip reports, which reach this process also when pytest-xdist ran the tests in others
    (tests/real/conftest.py is not loaded here then)."""
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if (getattr(report, "nodeid", "").startswith("tests/real/")
                and isinstance(longrepr, tuple) and REAL_SKIPPED in longrepr[2]):
            reason = longrepr[2].split(REAL_SKIPPED, 1)[1]
            terminalreporter.write_line(f"tests/real skipped: {reason}", yellow=True, bold=True)
            return
