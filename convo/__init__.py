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
from .events import ApprovalDecided, ApprovalRequested, ContextTrimmed, Event, StateEntered
from .interfaces import EchoMockInterface, ScriptedInterface, UserInterface
from .limits import Limits
from .messages import Message, ToolCall
from .models import EchoModel, FunctionModel, MockModel, Model
from .runner import Runner
from .session import Outcome, RunStatus, Session, TurnResult, Usage
from .templates import (
    DEFAULT_RESTRICTION_MESSAGE,
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    GenerateTemplate,
    GotoTemplate,
    IfTemplate,
    LinearTemplate,
    LoopGuard,
    LoopTemplate,
    MessageTemplate,
    StateMachineTemplate,
    SubroutineTemplate,
    SystemTemplate,
    Template,
    ToolingTemplate,
    UserTemplate,
)
from .terminal import CLIInterface, CommandLineRunner
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

if TYPE_CHECKING:
    from .tools.mcp import MCPServer


def __getattr__(name: str) -> Any:
    # OpenAIModel imports the openai SDK, which is slow: only when it is asked for.
    if name == "OpenAIModel":
        from .models.openai import OpenAIModel

        return OpenAIModel
    if name == "MCPServer":  # its module loads threading and weakref machinery; the SDK later
        from .tools.mcp import MCPServer

        return MCPServer
    raise AttributeError(f"module 'convo' has no attribute {name!r}")


__all__ = [
    "DEFAULT_RESTRICTION_MESSAGE",
    "Approval",
    "ApprovalDecided",
    "ApprovalRequested",
    "AssistantTemplate",
    "BreakTemplate",
    "CLIInterface",
    "CommandLineRunner",
    "ContextLengthError",
    "ContextTrimmed",
    "ContextWindow",
    "ConvoError",
    "DefinitionError",
    "EchoMockInterface",
    "EchoModel",
    "EndConversationTool",
    "EndTemplate",
    "Event",
    "FinishResponseTool",
    "FinishTaskTool",
    "FinishTool",
    "FunctionModel",
    "GenerateTemplate",
    "GotoTemplate",
    "IfTemplate",
    "InterfaceError",
    "Limits",
    "LinearTemplate",
    "LoopGuard",
    "LoopTemplate",
    "MCPServer",
    "Message",
    "MessageTemplate",
    "MockModel",
    "Model",
    "ModelError",
    "OpenAIModel",
    "Outcome",
    "ReachedEndTemplateException",
    "RenderError",
    "RunError",
    "RunStatus",
    "Runner",
    "ScriptError",
    "ScriptedInterface",
    "Session",
    "StateEntered",
    "StateMachineTemplate",
    "SubroutineTemplate",
    "SystemTemplate",
    "Template",
    "TemplateSyntaxError",
    "TerminateResponse",
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
    "tool",
]
