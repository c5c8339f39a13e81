"""Gemini's room: everything that speaks the Gemini API's words, behind ``Model``.

- ``model.py``: ``GeminiModel``, through the official ``google-genai`` SDK;
- ``wire.py``: the pure converter (requests out, responses and stream chunks in), with no
  SDK import (the fake server's side is the test kit's, ``convo.testing._server``);
- ``_errors.py``: the SDK's failures as ``ModelError``\\ s, and which are tried again.

``GeminiModel`` is loaded when first used: importing ``wire`` never imports the SDK.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GeminiModel"]


def __getattr__(name: str) -> Any:
    if name == "GeminiModel":
        from .model import GeminiModel

        return GeminiModel
    raise AttributeError(f"module 'convo.models._gemini' has no attribute {name!r}")
