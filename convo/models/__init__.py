"""Models: the protocol, models by name (``resolve``, ``register``), and models for tests.

Each provider is a room of its own (``convo.models._openai``, ``convo.models._anthropic``,
``convo.models._gemini``); ``resolve("PREFIX:NAME")`` imports one only when it makes its model,
and ``AnthropicModel`` and ``GeminiModel`` here are loaded when first used.
"""

from typing import TYPE_CHECKING

from .._faces import home as _home
from .._faces import lazy as _lazy
from .._reply import Finish
from ._base import Model, SyncModel
from ._deltas import Deltas
from ._mock import EchoModel, FunctionModel, MockModel, ModelCall
from ._providers import register, resolve

if TYPE_CHECKING:
    from ._anthropic import AnthropicModel
    from ._gemini import GeminiModel

_LAZY = {"AnthropicModel": "convo.models._anthropic",  # loaded when used: their SDKs are extras
         "GeminiModel": "convo.models._gemini"}

__all__ = ["AnthropicModel", "Deltas", "EchoModel", "Finish", "FunctionModel", "GeminiModel",
           "MockModel", "Model", "ModelCall", "SyncModel", "register", "resolve"]

__getattr__, __dir__ = _lazy(__name__, _LAZY)
_home(__name__, [name for name in __all__ if name not in _LAZY], globals())
