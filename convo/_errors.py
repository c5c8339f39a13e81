"""Every error convo raises, in one tree.

::

    ConvoError
    ├── DefinitionError            a mistake by the template's author, raised early
    │   │                          (when a template, tool or runner is built), naming the place
    │   ├── TemplateSyntaxError    Jinja that does not compile (also a jinja2.TemplateSyntaxError)
    │   └── ToolDefinitionError    a tool that cannot be described to a model
    └── RunError                   a failure while a conversation runs
        ├── RenderError            an undefined variable (also a jinja2.UndefinedError), a
        │                          failing Jinja filter
        ├── ToolArgumentError      arguments that do not fit a tool (the model is told)
        ├── ModelError             the model could not answer (network, HTTP status, bad reply)
        │   ├── ScriptError        a scripted model or replay ran out or went off script
        │   └── ContextLengthError the conversation does not fit in the model's context
        ├── ToolCallParseError     text meant to hold tool calls does not parse
        ├── MCPServerError         an MCP server could not start, be listed, or answer a call
        └── InterfaceError         the user interface cannot answer
    TranscriptError                a file is not a readable convo transcript

    ReachedEndTemplateException    not an error: the one control signal, "end the conversation"
    ToolRetry                      raised by a tool: "ask the model again, with this message"

Messages say what was expected, what was found, and where.
"""

from __future__ import annotations


class ConvoError(Exception):
    """Base class of every error convo raises."""


class DefinitionError(ConvoError):
    """The author of a template, tool or runner made a mistake; raised when it is built."""


class TemplateSyntaxError(DefinitionError):
    """Jinja source in a template does not compile."""


class ToolDefinitionError(DefinitionError):
    """A tool is malformed: no name, an unsupported argument type, duplicate names."""


class RunError(ConvoError):
    """Something failed while a conversation was running."""


class RenderError(RunError):
    """A template could not be rendered (for example an undefined variable)."""


class ToolArgumentError(RunError, ValueError):
    """Arguments do not fit a tool: missing, unexpected, of the wrong type, not JSON.

    Inside a run this never escapes: the model gets the message as the tool's result.
    """


class ModelError(RunError):
    """The model could not produce a reply."""


class ScriptError(ModelError, AssertionError):
    """A scripted model (MockModel, a replay) was asked for something its script lacks.

    Also an ``AssertionError`` so that pytest reports it as a failed expectation.
    """


class ContextLengthError(ModelError):
    """The conversation is longer than the model's context (the server said so), or its newest
    messages alone do not fit in the run's ``ContextWindow``."""


class ToolCallParseError(RunError, ValueError):
    """Text that should hold tool calls (a mock script, a model's text tool call) does not
    parse. Its own type, not an ``AssertionError``: production code parses model text too."""


class TranscriptError(ConvoError, ValueError):
    """A file is not a readable convo transcript (the message names the file and line)."""


class MCPServerError(RunError):
    """An MCP server could not start, list its tools or answer a call (the message names the
    server, the tool and the cause). Inside a run it becomes the call's error result."""


class InterfaceError(RunError):
    """The user interface could not answer (for example, none was given)."""


class ReachedEndTemplateException(Exception):
    """Ends the whole conversation from any depth; the runner records outcome ``ended``.

    Raised by ``EndTemplate``, ``EndConversationTool`` or any tool.
    """

    def __init__(self, farewell_message: str | None = None) -> None:
        super().__init__(farewell_message)
        self.farewell_message = farewell_message


class ToolRetry(Exception):
    """Raised by a tool: the model is told ``message`` and asked to call again.

    Counts as a failed call for the tool's ``retries`` budget.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
