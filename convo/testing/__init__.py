"""The public test kit: fake OpenAI, Anthropic and Gemini servers, pytest fixtures, strategies,
record and replay, simulated users, conversation snapshots, a model that needs no script
(``SmokeModel``) and evaluations (``Scenario``, ``evaluate``: pass rates over repeated runs).

``convo.testing.strategies`` (hypothesis) is a submodule: import it by name.

Names are imported lazily so that ``import convo.testing`` stays cheap.
"""

from __future__ import annotations

from .._faces import lazy

_LAZY = {
    "OpenAIServer": "convo.testing._server",
    "AnthropicServer": "convo.testing._server",
    "GeminiServer": "convo.testing._server",
    "FakeMCPServer": "convo.testing._mcp_fake",
    "MCPCall": "convo.testing._mcp_fake",
    "SimulatedUser": "convo.testing._simulated_user",
    "SmokeModel": "convo.testing._smoke",
    "assert_matches_snapshot": "convo.testing._snapshots",
    "ErrorReply": "convo.testing._server",
    "SlowReply": "convo.testing._server",
    "CutReply": "convo.testing._server",
    "load_recording": "convo.testing._replay",
    "replay_or_record": "convo.testing._replay",
    "tool_calls": "convo.testing._assertions",
    "RecordingModel": "convo.testing._replay",
    "ReplayModel": "convo.testing._replay",
    "assert_model_calls": "convo.testing._assertions",
    "assert_outcome": "convo.testing._assertions",
    "assert_tool_called": "convo.testing._assertions",
    "assert_tool_not_called": "convo.testing._assertions",
    "assert_transcript": "convo.testing._assertions",
    "expect": "convo.testing._assertions",
    "Scenario": "convo.testing._evaluation",
    "EvalResult": "convo.testing._evaluation",
    "evaluate": "convo.testing._evaluation",
    "aevaluate": "convo.testing._evaluation",
    "load_scenarios": "convo.testing._evaluation",
    "Cassette": "convo.testing._evaluation",
    "captured_spans": "convo.testing._spans",
    "temporal_server": "convo.testing._temporal",
}

__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = sorted(_LAZY)
