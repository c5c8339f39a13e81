"""Moved to ``convo.models.openai.wire_responses``, OpenAI's room; this name stays for code that
imported it from here."""

from .openai.wire_responses import *  # noqa: F403
