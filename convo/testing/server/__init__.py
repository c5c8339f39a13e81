"""The fake OpenAI server: ``OpenAIServer`` and the reply values it can be scripted with.

- ``openai_server.py``: the server (its script, the per-request ``handler``, its lifecycle);
- ``replies.py``: ``ErrorReply``, ``SlowReply``, ``CutReply`` and the responses they become;
- ``connection.py``: the HTTP/1.1 it speaks.
"""

from .openai_server import Handler, OpenAIServer
from .replies import CutReply, ErrorReply, ServerReply, SlowReply

__all__ = ["CutReply", "ErrorReply", "Handler", "OpenAIServer", "ServerReply", "SlowReply"]
