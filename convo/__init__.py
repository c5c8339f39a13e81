"""convo: conversations with language models as code.

Composable templates describe a conversation; a Runner drives it against a model and a user
interface; every run ends with an Outcome that says why.

Every name here is loaded when it is first used (``from convo import Runner`` loads the
runner, the templates and the values it needs; the terminal, the model SDKs, Starlette and
the MCP SDK load only with what uses them), so ``import convo`` costs next to nothing and a
program pays only for what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

# Where each public name lives (the curated API; ``__all__`` below is pinned by a test).
_LAZY: dict[str, str] = {
    "AnthropicModel": "convo.models.anthropic",
    "Approval": "convo.approval",
    "ApprovalDecided": "convo.events",
    "ApprovalRequested": "convo.events",
    "AssistantTemplate": "convo.templates",
    "Audio": "convo.parts",
    "BreakTemplate": "convo.templates",
    "CLIInterface": "convo.terminal.input",
    "CommandLineRunner": "convo.terminal.runner",
    "ContextLengthError": "convo.errors",
    "ContextTrimmed": "convo.events",
    "ContextWindow": "convo.context",
    "ConvoError": "convo.errors",
    "DEFAULT_RESTRICTION_MESSAGE": "convo.templates",
    "DefinitionError": "convo.errors",
    "Document": "convo.parts",
    "EchoMockInterface": "convo.interfaces",
    "EchoModel": "convo.models",
    "EndConversationTool": "convo.tools",
    "EndTemplate": "convo.templates",
    "Event": "convo.events",
    "ExecuteToolTemplate": "convo.templates",
    "FinishResponseTool": "convo.tools",
    "FinishTaskTool": "convo.tools",
    "FinishTool": "convo.tools",
    "FunctionModel": "convo.models",
    "GeminiModel": "convo.models.gemini",
    "GenerateTemplate": "convo.templates",
    "GotoTemplate": "convo.templates",
    "HandoffTool": "convo.tools.handoff",
    "IfTemplate": "convo.templates",
    "Image": "convo.parts",
    "InterfaceError": "convo.errors",
    "Limits": "convo.limits",
    "LinearTemplate": "convo.templates",
    "LoopGuard": "convo.templates",
    "LoopTemplate": "convo.templates",
    "MCPServer": "convo.tools.mcp",
    "Message": "convo.messages",
    "MessageAdded": "convo.events",
    "MessageTemplate": "convo.templates",
    "MockModel": "convo.models",
    "Model": "convo.models",
    "ModelError": "convo.errors",
    "OpenAIModel": "convo.models.openai",
    "Outcome": "convo.session",
    "ReachedEndTemplateException": "convo.errors",
    "ReasoningDelta": "convo.events",
    "RenderError": "convo.errors",
    "ReplyTruncated": "convo.events",
    "RunError": "convo.errors",
    "RunStatus": "convo.session",
    "Runner": "convo.runner",
    "ScriptError": "convo.errors",
    "ScriptedInterface": "convo.interfaces",
    "Session": "convo.session",
    "StateEntered": "convo.events",
    "StateMachineTemplate": "convo.templates",
    "SubroutineTemplate": "convo.templates",
    "SubroutineTool": "convo.templates",
    "SystemTemplate": "convo.templates",
    "Template": "convo.templates",
    "TemplateSyntaxError": "convo.errors",
    "TerminateResponse": "convo.tools",
    "Text": "convo.parts",
    "TextDelta": "convo.events",
    "Tool": "convo.tools",
    "ToolArgument": "convo.tools",
    "ToolArgumentError": "convo.errors",
    "ToolCall": "convo.messages",
    "ToolCallParseError": "convo.errors",
    "ToolContext": "convo.tools",
    "ToolDefinitionError": "convo.errors",
    "ToolResult": "convo.tools",
    "ToolRetry": "convo.errors",
    "ToolingTemplate": "convo.templates",
    "TranscriptError": "convo.errors",
    "Transition": "convo.tools",
    "TurnResult": "convo.session",
    "Usage": "convo.session",
    "UserInterface": "convo.interfaces",
    "UserTemplate": "convo.templates",
    "__version__": "convo.version",
    "load_transcript": "convo.record.transcript",
    "tool": "convo.tools",
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'convo' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
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
    from .models.anthropic.model import AnthropicModel
    from .models.gemini.model import GeminiModel
    from .models.openai import OpenAIModel
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
    from .terminal.input import CLIInterface
    from .terminal.runner import CommandLineRunner
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
    from .tools.handoff import HandoffTool
    from .tools.mcp import MCPServer
    from .version import __version__

__all__ = [
    "DEFAULT_RESTRICTION_MESSAGE",
    "AnthropicModel",
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
    "GeminiModel",
    "GenerateTemplate",
    "GotoTemplate",
    "HandoffTool",
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
