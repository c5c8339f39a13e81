"""Models: the protocol, models by name (``resolve``, ``register``), and models for tests.

Each provider is a room of its own (``convo.models.openai``, ``convo.models.anthropic``,
``convo.models.gemini``); ``resolve("PREFIX:NAME")`` imports one only when it makes its model,
and ``AnthropicModel`` and ``GeminiModel`` here are loaded when first used.
"""

from typing import Any

from .base import Model, SyncModel
from .mock import EchoModel, FunctionModel, MockModel, ModelCall
from .providers import register, resolve

__all__ = ["AnthropicModel", "EchoModel", "FunctionModel", "GeminiModel", "MockModel", "Model",
           "ModelCall", "SyncModel", "register", "resolve"]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":  # loaded when used: its SDK is an extra
        from .anthropic import AnthropicModel

        return AnthropicModel
    if name == "GeminiModel":  # loaded when used: its SDK is an extra
        from .gemini import GeminiModel

        return GeminiModel
    raise AttributeError(f"module 'convo.models' has no attribute {name!r}")
