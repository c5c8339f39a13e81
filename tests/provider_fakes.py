"""One model-independent test on every provider: the ``provider_model`` fixture's kit.

``provider_model`` (tests/conftest.py) is parametrized by ``PROVIDERS``: a test that takes it
runs once per provider, each time on a model of that provider (``OpenAIModel``,
``AnthropicModel``, ...) talking through its real SDK to that provider's wire-level fake,
scripted with the same replies a ``MockModel`` takes::

    def test_a_turn(provider_model: FakeProvider) -> None:
        model = provider_model(["{add(a=1)}", "Two."])
        session = Runner(model, template).run()
        assert plain(session.messages) == [...]  # as with a MockModel

The fake is the provider's own server fixture (``openai_server``, ``anthropic_server``), so an
unused scripted reply fails the test as it does there. A provider joins with one entry in
``PROVIDERS``; while its SDK or its fake server is missing, its cases skip saying which.
Where a provider cannot do what a test needs, the test skips that case saying why
(``provider_model.cannot(...)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import pytest

from convo import Message
from convo.models._base import Model

# The reply facts a live provider writes on every reply (a MockModel writes none).
REPLY_FACTS = ("finish_reason", "usage", "gemini_call_ids")  # (Gemini: the ids it sent)


@attrs.frozen
class Provider:
    """How one provider's model is made on its fake: the SDK it needs, the pytest fixture of
    its fake server, and the model class (``module:Class``) given ``base_url`` and a key."""

    sdk: str
    server_fixture: str
    model: str
    options: dict[str, Any] = attrs.field(factory=dict)

    def make(self, server: Any, **kw: Any) -> Model:
        module, _, cls = self.model.partition(":")
        made: Model = getattr(importlib.import_module(module), cls)(
            base_url=server.base_url, api_key="test", max_retries=0, **self.options | kw)
        return made


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("openai", "openai_server", "convo.models._openai:OpenAIModel"),
    # (a name of its own: the SDK warns that the default model is deprecated)
    "anthropic": Provider("anthropic", "anthropic_server",
                          "convo.models._anthropic:AnthropicModel", {"model": "claude-test"}),
    "gemini": Provider("google.genai", "gemini_server", "convo.models._gemini:GeminiModel"),
}


class FakeProvider:
    """What ``provider_model`` gives a test: call it with a script to get a model on the
    provider's fake; ``.name`` and ``.server`` (its requests) are there to look at."""

    def __init__(self, name: str, provider: Provider, server: Any) -> None:
        self.name = name
        self.provider = provider
        self.server = server
        self.models: list[Model] = []

    def __call__(self, replies: Iterable[Any] = (), *,
                 handler: Callable[[dict[str, Any]], Any] | None = None,
                 check_complete: bool = True, **kw: Any) -> Model:
        """A model on this provider's fake, whose script gains ``replies``; ``handler``
        answers each request body first (as ``OpenAIServer(handler=...)`` does);
        ``check_complete=False`` lets replies go unused; ``kw`` goes to the model
        (``stream=True``)."""
        if isinstance(replies, str | Message):
            replies = [replies]
        self.server.add(*replies)
        if handler is not None:
            self.server.handler = handler
        if not check_complete:
            self.server.check_complete = False
        model = self.provider.make(self.server, **kw)
        self.models.append(model)
        return model

    @property
    def calls(self) -> int:
        """How many model calls reached the fake."""
        return len(self.server.requests)

    def cannot(self, *providers: str, why: str) -> None:
        """Skip this case on ``providers``, saying why they cannot do what it needs."""
        if self.name in providers:
            pytest.skip(f"{self.name}: {why}")

    def close(self) -> None:
        for model in self.models:
            close = getattr(model, "close", None)
            if close is not None:
                close()

    def __repr__(self) -> str:
        return f"FakeProvider({self.name})"


def plain(messages: Sequence[Message]) -> list[Message]:
    """The messages without the reply facts a live provider adds (finish reason, usage), so
    they compare equal to what a ``MockModel`` run makes."""
    return [attrs.evolve(m, metadata={k: v for k, v in m.metadata.items()
                                      if k not in REPLY_FACTS})
            if any(k in m.metadata for k in REPLY_FACTS) else m
            for m in messages]


def provider_fake(request: pytest.FixtureRequest) -> FakeProvider:
    """The fixture's body: the parametrized provider's fake, or a skip saying what is
    missing."""
    name: str = request.param
    provider = PROVIDERS[name]
    try:
        importlib.import_module(provider.sdk)
    except ImportError:
        pytest.skip(f"{name}: the {provider.sdk} SDK is not installed (the {name} extra)")
    try:
        server = request.getfixturevalue(provider.server_fixture)
    except pytest.FixtureLookupError:
        pytest.skip(f"{name}: no {provider.server_fixture} fixture in this convo yet")
    return FakeProvider(name, provider, server)
