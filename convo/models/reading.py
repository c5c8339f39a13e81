"""Moved to ``convo.models.openai.reading``, OpenAI's room; this name stays for code that
imported it from here."""

from .openai.reading import *  # noqa: F403
