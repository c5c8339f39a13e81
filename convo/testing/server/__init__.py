"""The fake OpenAI server: ``OpenAIServer`` and the reply values it can be scripted with.

- ``openai_server.py``: the server (its script, the per-request ``handler``, its lifecycle);
- ``replies.py``: ``ErrorReply``, ``SlowReply``, ``CutReply`` and the responses they become;
- ``connection.py``: the HTTP/1.1 it speaks;
- ``chat_wire.py`` and ``responses_wire.py``: the server's side of the Chat Completions and
  Responses wire formats (requests read, replies written), beside the client's side in
  ``convo.models.openai``.
"""

from .openai_server import Handler, OpenAIServer
from .replies import CutReply, ErrorReply, ServerReply, SlowReply

__all__ = ["CutReply", "ErrorReply", "Handler", "OpenAIServer", "ServerReply", "SlowReply"]
