"""OpenAI's modules moved into their room (convo.models.openai); the paths code may have
imported them from still import, and give the same objects."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(("old", "new", "name"), [
    ("convo.models.wire", "convo.models.openai.wire", "message_to_wire"),
    ("convo.models.wire_responses", "convo.models.openai.wire_responses", "input_to_wire"),
    ("convo.models.text_protocol", "convo.models.openai.text_protocol", "read_reply"),
    ("convo.models.reading", "convo.models.openai.reading", "ReplyReader"),
    ("convo.models.openai", "convo.models.openai.model", "OpenAIModel"),
    ("convo", "convo.models.openai.model", "OpenAIModel"),
    ("convo.testing", "convo.testing.server.openai_server", "OpenAIServer"),
])
def test_an_earlier_path_gives_the_same_object(old: str, new: str, name: str) -> None:
    assert getattr(importlib.import_module(old), name) is \
        getattr(importlib.import_module(new), name)
