"""Moved to ``convo.models.openai.wire``, OpenAI's room; this name stays for code that
imported it from here."""

from .openai.wire import *  # noqa: F403
