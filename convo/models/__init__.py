"""Models: the protocol, models by name (``resolve``, ``register``), and models for tests.

Each provider is a room of its own (``convo.models.openai``, ``convo.models.anthropic``);
``resolve("PREFIX:NAME")`` imports one only when it makes its model, and ``AnthropicModel``
here is loaded when first used.
"""

from typing import Any

from .base import Model, SyncModel
from .mock import EchoModel, FunctionModel, MockModel, ModelCall
from .providers import register, resolve

__all__ = ["AnthropicModel", "EchoModel", "FunctionModel", "MockModel", "Model", "ModelCall",
           "SyncModel", "register", "resolve"]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":  # loaded when used: its SDK is an extra
        from .anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module 'convo.models' has no attribute {name!r}")
