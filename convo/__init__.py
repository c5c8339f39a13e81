"""convo: conversations with language models as code.

Composable templates describe a conversation; a Runner drives it against a model and a user
interface; every run ends with an Outcome that says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .approval import Approval
from .context import ContextWindow
from .errors import (
    ContextLengthError,
    ConvoError,
    DefinitionError,
    InterfaceError,
    ModelError,
    ReachedEndTemplateException,
    RenderError,
    RunError,
    ScriptError,
    TemplateSyntaxError,
    ToolArgumentError,
    ToolCallParseError,
    ToolDefinitionError,
    ToolRetry,
    TranscriptError,
)
from .events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    MessageAdded,
    ReasoningDelta,
    ReplyTruncated,
    StateEntered,
    TextDelta,
)
from .interfaces import EchoMockInterface, ScriptedInterface, UserInterface
from .limits import Limits
from .messages import Message, ToolCall
from .models import EchoModel, FunctionModel, MockModel, Model
from .parts import Audio, Document, Image, Text
from .record.transcript import load_transcript
from .runner import Runner
from .session import Outcome, RunStatus, Session, TurnResult, Usage
from .templates import (
    DEFAULT_RESTRICTION_MESSAGE,
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    ExecuteToolTemplate,
    GenerateTemplate,
    GotoTemplate,
    IfTemplate,
    LinearTemplate,
    LoopGuard,
    LoopTemplate,
    MessageTemplate,
    StateMachineTemplate,
    SubroutineTemplate,
    SubroutineTool,
    SystemTemplate,
    Template,
    ToolingTemplate,
    UserTemplate,
)
from .tools import (
    EndConversationTool,
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
    TerminateResponse,
    Tool,
    ToolArgument,
    ToolContext,
    ToolResult,
    Transition,
    tool,
)
from .version import __version__

# Loaded when first asked for, so that `import convo` stays small: the openai SDK is slow to
# import, and the terminal is only for programs that chat in one.
_LAZY = {
    "OpenAIModel": "convo.models.openai",
    "CLIInterface": "convo.terminal.input",
    "CommandLineRunner": "convo.terminal.runner",
    "MCPServer": "convo.tools.mcp",  # threading and weakref machinery; the SDK later still
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'convo' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .models.openai import OpenAIModel
    from .terminal.input import CLIInterface
    from .terminal.runner import CommandLineRunner
    from .tools.mcp import MCPServer


__all__ = [
    "DEFAULT_RESTRICTION_MESSAGE",
    "Approval",
    "ApprovalDecided",
    "ApprovalRequested",
    "AssistantTemplate",
    "Audio",
    "BreakTemplate",
    "CLIInterface",
    "CommandLineRunner",
    "ContextLengthError",
    "ContextTrimmed",
    "ContextWindow",
    "ConvoError",
    "DefinitionError",
    "Document",
    "EchoMockInterface",
    "EchoModel",
    "EndConversationTool",
    "EndTemplate",
    "Event",
    "ExecuteToolTemplate",
    "FinishResponseTool",
    "FinishTaskTool",
    "FinishTool",
    "FunctionModel",
    "GenerateTemplate",
    "GotoTemplate",
    "IfTemplate",
    "Image",
    "InterfaceError",
    "Limits",
    "LinearTemplate",
    "LoopGuard",
    "LoopTemplate",
    "MCPServer",
    "Message",
    "MessageAdded",
    "MessageTemplate",
    "MockModel",
    "Model",
    "ModelError",
    "OpenAIModel",
    "Outcome",
    "ReachedEndTemplateException",
    "ReasoningDelta",
    "RenderError",
    "ReplyTruncated",
    "RunError",
    "RunStatus",
    "Runner",
    "ScriptError",
    "ScriptedInterface",
    "Session",
    "StateEntered",
    "StateMachineTemplate",
    "SubroutineTemplate",
    "SubroutineTool",
    "SystemTemplate",
    "Template",
    "TemplateSyntaxError",
    "TerminateResponse",
    "Text",
    "TextDelta",
    "Tool",
    "ToolArgument",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallParseError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolResult",
    "ToolRetry",
    "ToolingTemplate",
    "TranscriptError",
    "Transition",
    "TurnResult",
    "Usage",
    "UserInterface",
    "UserTemplate",
    "__version__",
    "load_transcript",
    "tool",
]
