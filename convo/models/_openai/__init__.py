"""OpenAI's room: everything that speaks OpenAI's words, behind the ``Model`` protocol.

- ``model.py``: ``OpenAIModel``, the client's lifecycle (Chat Completions or the Responses API
  through the official ``openai`` SDK);
- ``request.py``: the keyword arguments it passes to the SDK, one function per API;
- ``wire.py`` and ``wire_responses.py``: the pure converters of Chat Completions and the
  Responses API (their server sides are the test kit's, ``convo.testing._server``); they map
  OpenAI's ``finish_reason``, usage and refusals to a reply's typed facts (``convo._reply``);
- ``reading.py``: a reply's body read under a deadline; ``_errors.py``: the SDK's failures as
  ``ModelError``s; ``local.py``: waiting for a local server that is starting;
- ``text_protocol.py``: the two tool formats (``tool_format="native"`` or ``"text"``).

Importing this package imports the ``openai`` SDK.
"""

from .._sdk_clients import PLACEHOLDER_API_KEY
from .model import OpenAIModel

__all__ = ["PLACEHOLDER_API_KEY", "OpenAIModel"]
