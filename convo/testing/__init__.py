"""The public test kit: a fake OpenAI server, pytest fixtures, strategies, record and replay.

Names are imported lazily so that ``import convo.testing`` stays cheap.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "OpenAIServer": "convo.testing.server",
    "ErrorReply": "convo.testing.server",
    "SlowReply": "convo.testing.server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'convo.testing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = sorted(_LAZY)
