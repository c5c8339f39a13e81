"""Shared test configuration: pytester for the plugin tests, and ``provider_model`` (the
model-independent tests on every provider's fake; the kit is ``provider_fakes.py``)."""

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
