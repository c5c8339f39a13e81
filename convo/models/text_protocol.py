"""Moved to ``convo.models.openai.text_protocol``, OpenAI's room; this name stays for code that
imported it from here."""

from .openai.text_protocol import *  # noqa: F403
