"""The fake servers: ``OpenAIServer``, ``AnthropicServer``, ``GeminiServer`` and the reply values
they take.

- ``openai_server.py``: the server (its script, the per-request ``handler``, its lifecycle);
- ``replies.py``: ``ErrorReply``, ``SlowReply``, ``CutReply`` and the responses they become;
- ``connection.py``: the HTTP/1.1 it speaks;
- ``chat_wire.py`` and ``responses_wire.py``: the server's side of the Chat Completions and
  Responses wire formats (requests read, replies written), beside the client's side in
  ``convo.models._openai``;
- ``anthropic_server.py`` and ``anthropic_wire.py``: the Messages API's server and its side
  of the wire (the client's is ``convo.models._anthropic.wire``), with the prompt cache counted;
- ``gemini_server.py`` and ``gemini_wire.py``: the Gemini API's server and its side of the wire
  (the client's is ``convo.models._gemini.wire``).
"""

from .anthropic_server import AnthropicServer
from .gemini_server import GeminiServer
from .openai_server import Handler, OpenAIServer
from .replies import CutReply, ErrorReply, ServerReply, SlowReply

__all__ = ["AnthropicServer", "CutReply", "ErrorReply", "GeminiServer", "Handler", "OpenAIServer",
           "ServerReply", "SlowReply"]
