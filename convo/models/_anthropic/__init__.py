"""Anthropic's room: everything that speaks the Messages API's words, behind ``Model``.

- ``model.py``: ``AnthropicModel``, through the official ``anthropic`` SDK;
- ``wire.py``: the pure converter (requests out, responses and stream events in), with no
  SDK import (the fake server's side is the test kit's, ``convo.testing._server``);
- ``_errors.py``: the SDK's failures as ``ModelError``\\ s.

``AnthropicModel`` is loaded when first used: importing ``wire`` never imports the SDK.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AnthropicModel"]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from .model import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module 'convo.models._anthropic' has no attribute {name!r}")
