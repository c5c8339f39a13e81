"""The support-bot example on a model that picks its reply by how far the conversation is.

A ``MockModel`` script starts over in every process; this model answers the Nth model call of
the conversation with the example's Nth reply however many of them were replayed, so that
``convo run --resume`` can go on where a saved run stopped.
"""

import sys
from pathlib import Path

from convo import FunctionModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import support_bot

template = support_bot.template
demo_input = support_bot.demo_input
REPLIES = support_bot.mock_model.replies


def _reply(messages, tools):
    made = sum(m.role == "assistant" for m in messages) - 1  # the greeting is scripted
    return REPLIES[made]


mock_model = FunctionModel(_reply)
