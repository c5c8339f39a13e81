"""Models: the protocol, the OpenAI model, and models for tests."""

from .base import Model, SyncModel
from .mock import EchoModel, FunctionModel, MockModel, ModelCall

__all__ = ["EchoModel", "FunctionModel", "MockModel", "Model", "ModelCall", "SyncModel"]
