"""Hypothesis strategies for property-testing conversations and templates.

Values:
    ``texts()``, ``json_values()``, ``tool_calls()``, ``messages()``, ``histories()`` (valid
    conversations: every tool call answered once), ``sessions()`` (with state, turns, outcome),
    ``parts()`` and ``contents()`` (text, or text with images, audio and documents; user
    messages in ``messages()`` and ``histories()`` sometimes carry them).

Scripted model replies (for ``MockModel`` / ``FunctionModel``):
    ``reply_strings(tools)`` in the inline ``{tool(arg=...)}`` syntax: plain text, valid and
    broken tool calls, finish calls, empty replies; ``reply_messages(tools)`` the same as
    ``Message`` objects; ``replies(tools)`` either; ``scripts(tools)`` a list of replies with
    unique tool-call ids.

Template trees:
    ``template_trees()`` builds random trees with ``st.recursive``. Every loop is bounded
    (``exit_loop_count``, or an ``exit_condition`` its body is sure to meet), a
    ``BreakTemplate`` only appears inside a loop, and text never contains Jinja markup. Pass
    ``extra_leaves`` to mix in your own templates (a ``ToolingTemplate``, say).

Example::

    @given(tree=template_trees(), script=scripts())
    def test_every_run_ends(tree, script):
        session = Runner(MockModel(script, repeat_last=True), tree,
                         ScriptedInterface(["hi"] * 5), max_messages=200).run()
        assert session.outcome is not None
"""

from __future__ import annotations

from ._replies import (
    DEPRECATED_CALLS,
    FINISH_CALLS,
    replies,
    reply_messages,
    reply_strings,
    scripts,
)
from ._trees import Condition, template_trees
from ._values import (
    contents,
    histories,
    json_values,
    messages,
    parts,
    sessions,
    texts,
    tool_calls,
    tool_names,
)

__all__ = [
    "DEPRECATED_CALLS",
    "FINISH_CALLS",
    "Condition",
    "contents",
    "histories",
    "json_values",
    "messages",
    "parts",
    "replies",
    "reply_messages",
    "reply_strings",
    "scripts",
    "sessions",
    "template_trees",
    "texts",
    "tool_calls",
    "tool_names",
]
