"""Streaming in the text tool format: the text before a call shows at once, the call never."""

from __future__ import annotations

import pytest

from convo.models._openai.text_protocol import CallHider

# -- streaming: calls never show as text ------------------------------------------------------

HIDE = [
    pytest.param(["Hello", " world"], "Hello world", id="plain"),
    pytest.param(["Let me look.\n<tool_call>", '{"name": "x"}', "</tool_call>"],
                 "Let me look.\n", id="call-hidden"),
    pytest.param(["Look.<tool", "_ca", "ll>{}</tool_", "call>\nBye"], "Look.\nBye",
                 id="tags-split-across-deltas"),
    pytest.param(["a <b> c <tool"], "a <b> c <tool", id="held-back-then-flushed"),
    pytest.param(["x < y and y<", "z"], "x < y and y<z", id="lone-less-than"),
    pytest.param(["<tool_call>{}"], "", id="unclosed-call-never-shows"),
    pytest.param(list('Hi <tool_call>{"a": 1}</tool_call>!'), "Hi !", id="char-by-char"),
]


@pytest.mark.parametrize(("deltas", "shown"), HIDE)
def test_call_hider(deltas: list[str], shown: str) -> None:
    hider = CallHider()
    out = [hider.feed(d) for d in deltas]
    out.append(hider.flush())
    assert "".join(out) == shown


def test_call_hider_shows_text_as_soon_as_it_is_decided() -> None:
    hider = CallHider()
    assert hider.feed("Hello <") == "Hello "
    assert hider.feed("b>") == "<b>"
