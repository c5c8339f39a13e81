"""Guardrails (API.md §27): ``Guard`` and ``ModelGuard``, and the built-in guards: ``pii``
(emails, phone numbers, Luhn-checked cards, IBANs with valid check digits), ``max_length``,
``matches`` and ``json_schema``. See docs/guards.md."""

from __future__ import annotations

from .._faces import home as _home
from ._base import Guard, GuardContext, GuardEnded, ModelGuard
from ._builtin import json_schema, matches, max_length, pii

__all__ = ["Guard", "GuardContext", "GuardEnded", "ModelGuard", "json_schema", "matches",
           "max_length", "pii"]

_home(__name__, __all__, globals())
