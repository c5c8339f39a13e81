"""The public test kit: fake OpenAI, Anthropic and Gemini servers, pytest fixtures, strategies,
record and replay, simulated users, conversation snapshots, a model that needs no script
(``SmokeModel``) and evaluations (``Scenario``, ``evaluate``: pass rates over repeated runs).

``convo.testing.strategies`` (hypothesis) is a submodule: import it by name.

Names are imported lazily so that ``import convo.testing`` stays cheap.
"""

from __future__ import annotations

from .._faces import lazy

_LAZY = {
    "OpenAIServer": "convo.testing.server",
    "AnthropicServer": "convo.testing.server",
    "GeminiServer": "convo.testing.server",
    "FakeMCPServer": "convo.testing.mcp_fake",
    "MCPCall": "convo.testing.mcp_fake",
    "SimulatedUser": "convo.testing.simulated_user",
    "SmokeModel": "convo.testing.smoke",
    "assert_matches_snapshot": "convo.testing.snapshots",
    "ErrorReply": "convo.testing.server",
    "SlowReply": "convo.testing.server",
    "CutReply": "convo.testing.server",
    "load_recording": "convo.testing.replay",
    "replay_or_record": "convo.testing.replay",
    "tool_calls": "convo.testing.assertions",
    "RecordingModel": "convo.testing.replay",
    "ReplayModel": "convo.testing.replay",
    "assert_model_calls": "convo.testing.assertions",
    "assert_outcome": "convo.testing.assertions",
    "assert_tool_called": "convo.testing.assertions",
    "assert_tool_not_called": "convo.testing.assertions",
    "assert_transcript": "convo.testing.assertions",
    "expect": "convo.testing.assertions",
    "Scenario": "convo.testing.evaluation",
    "EvalResult": "convo.testing.evaluation",
    "evaluate": "convo.testing.evaluation",
    "aevaluate": "convo.testing.evaluation",
    "load_scenarios": "convo.testing.evaluation",
    "Cassette": "convo.testing.evaluation",
    "captured_spans": "convo.testing.spans",
    "temporal_server": "convo.testing.temporal",
}

__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = sorted(_LAZY)
