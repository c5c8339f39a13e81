"""convo: conversations with language models as code.

Composable templates describe a conversation; a Runner drives it against a model and a user
interface; every run ends with an Outcome that says why.

Every name here is loaded when it is first used (``from convo import Runner`` loads the
runner, the templates and the values it needs; the terminal, the model SDKs, Starlette and
the MCP SDK load only with what uses them), so ``import convo`` costs next to nothing and a
program pays only for what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._faces import lazy
from .version import __version__

# Where each public name lives: the curated API, written once (``__all__`` is its names;
# tests/docs/test_public_api.py pins them, tests/docs/test_exports.py how they are exported).
_LAZY: dict[str, str] = {
    "AnthropicModel": "convo.models",
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
    "GeminiModel": "convo.models",
    "GenerateTemplate": "convo.templates",
    "GotoTemplate": "convo.templates",
    "Guard": "convo.guards",
    "GuardTripped": "convo.events",
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
    "ModelGuard": "convo.guards",
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

__getattr__, __dir__ = lazy(__name__, _LAZY)

# What mypy reads (it cannot follow the map): the same names, pinned to the map by
# tests/docs/test_exports.py.
if TYPE_CHECKING:
    from .approval import Approval as Approval
    from .context import ContextWindow as ContextWindow
    from .errors import (
        ContextLengthError as ContextLengthError,
    )
    from .errors import (
        ConvoError as ConvoError,
    )
    from .errors import (
        DefinitionError as DefinitionError,
    )
    from .errors import (
        InterfaceError as InterfaceError,
    )
    from .errors import (
        ModelError as ModelError,
    )
    from .errors import (
        ReachedEndTemplateException as ReachedEndTemplateException,
    )
    from .errors import (
        RenderError as RenderError,
    )
    from .errors import (
        RunError as RunError,
    )
    from .errors import (
        ScriptError as ScriptError,
    )
    from .errors import (
        TemplateSyntaxError as TemplateSyntaxError,
    )
    from .errors import (
        ToolArgumentError as ToolArgumentError,
    )
    from .errors import (
        ToolCallParseError as ToolCallParseError,
    )
    from .errors import (
        ToolDefinitionError as ToolDefinitionError,
    )
    from .errors import (
        ToolRetry as ToolRetry,
    )
    from .errors import (
        TranscriptError as TranscriptError,
    )
    from .events import (
        ApprovalDecided as ApprovalDecided,
    )
    from .events import (
        ApprovalRequested as ApprovalRequested,
    )
    from .events import (
        ContextTrimmed as ContextTrimmed,
    )
    from .events import (
        Event as Event,
    )
    from .events import (
        GuardTripped as GuardTripped,
    )
    from .events import (
        MessageAdded as MessageAdded,
    )
    from .events import (
        ReasoningDelta as ReasoningDelta,
    )
    from .events import (
        ReplyTruncated as ReplyTruncated,
    )
    from .events import (
        StateEntered as StateEntered,
    )
    from .events import (
        TextDelta as TextDelta,
    )
    from .guards import Guard as Guard
    from .guards import ModelGuard as ModelGuard
    from .interfaces import EchoMockInterface as EchoMockInterface
    from .interfaces import ScriptedInterface as ScriptedInterface
    from .interfaces import UserInterface as UserInterface
    from .limits import Limits as Limits
    from .messages import Message as Message
    from .messages import ToolCall as ToolCall
    from .models import EchoModel as EchoModel
    from .models import FunctionModel as FunctionModel
    from .models import MockModel as MockModel
    from .models import Model as Model
    from .models.anthropic.model import AnthropicModel as AnthropicModel
    from .models.gemini.model import GeminiModel as GeminiModel
    from .models.openai import OpenAIModel as OpenAIModel
    from .parts import Audio as Audio
    from .parts import Document as Document
    from .parts import Image as Image
    from .parts import Text as Text
    from .record.transcript import load_transcript as load_transcript
    from .runner import Runner as Runner
    from .session import Outcome as Outcome
    from .session import RunStatus as RunStatus
    from .session import Session as Session
    from .session import TurnResult as TurnResult
    from .session import Usage as Usage
    from .templates import (
        DEFAULT_RESTRICTION_MESSAGE as DEFAULT_RESTRICTION_MESSAGE,
    )
    from .templates import (
        AssistantTemplate as AssistantTemplate,
    )
    from .templates import (
        BreakTemplate as BreakTemplate,
    )
    from .templates import (
        EndTemplate as EndTemplate,
    )
    from .templates import (
        ExecuteToolTemplate as ExecuteToolTemplate,
    )
    from .templates import (
        GenerateTemplate as GenerateTemplate,
    )
    from .templates import (
        GotoTemplate as GotoTemplate,
    )
    from .templates import (
        IfTemplate as IfTemplate,
    )
    from .templates import (
        LinearTemplate as LinearTemplate,
    )
    from .templates import (
        LoopGuard as LoopGuard,
    )
    from .templates import (
        LoopTemplate as LoopTemplate,
    )
    from .templates import (
        MessageTemplate as MessageTemplate,
    )
    from .templates import (
        StateMachineTemplate as StateMachineTemplate,
    )
    from .templates import (
        SubroutineTemplate as SubroutineTemplate,
    )
    from .templates import (
        SubroutineTool as SubroutineTool,
    )
    from .templates import (
        SystemTemplate as SystemTemplate,
    )
    from .templates import (
        Template as Template,
    )
    from .templates import (
        ToolingTemplate as ToolingTemplate,
    )
    from .templates import (
        UserTemplate as UserTemplate,
    )
    from .terminal.input import CLIInterface as CLIInterface
    from .terminal.runner import CommandLineRunner as CommandLineRunner
    from .tools import (
        EndConversationTool as EndConversationTool,
    )
    from .tools import (
        FinishResponseTool as FinishResponseTool,
    )
    from .tools import (
        FinishTaskTool as FinishTaskTool,
    )
    from .tools import (
        FinishTool as FinishTool,
    )
    from .tools import (
        TerminateResponse as TerminateResponse,
    )
    from .tools import (
        Tool as Tool,
    )
    from .tools import (
        ToolArgument as ToolArgument,
    )
    from .tools import (
        ToolContext as ToolContext,
    )
    from .tools import (
        ToolResult as ToolResult,
    )
    from .tools import (
        Transition as Transition,
    )
    from .tools import (
        tool as tool,
    )
    from .tools.handoff import HandoffTool as HandoffTool
    from .tools.mcp import MCPServer as MCPServer
    from .version import __version__ as __version__


__all__ = sorted(_LAZY)
