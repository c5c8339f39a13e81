"""Models: the protocol, models by name (``resolve``, ``register``), and models for tests.

Each provider is a room of its own (``convo.models.openai``); ``resolve("PREFIX:NAME")``
imports one only when it makes its model.
"""

from .base import Model, SyncModel
from .mock import EchoModel, FunctionModel, MockModel, ModelCall
from .providers import register, resolve

__all__ = ["EchoModel", "FunctionModel", "MockModel", "Model", "ModelCall", "SyncModel",
           "register", "resolve"]
