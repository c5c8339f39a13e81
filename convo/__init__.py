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
from ._version import __version__

# Where each public name lives: the curated API, written once (``__all__`` is its names;
# tests/docs/test_public_api.py pins them, tests/docs/test_exports.py how they are exported).
_LAZY: dict[str, str] = {
    "AnthropicModel": "convo.models",
    "Approval": "convo._approval",
    "ApprovalDecided": "convo.events",
    "ApprovalRequested": "convo.events",
    "AssistantTemplate": "convo.templates",
    "Audio": "convo._parts",
    "BreakTemplate": "convo.templates",
    "CLIInterface": "convo._terminal.input",
    "CommandLineRunner": "convo._terminal.runner",
    "ContextLengthError": "convo._errors",
    "ContextTrimmed": "convo.events",
    "ContextWindow": "convo._context",
    "ConvoError": "convo._errors",
    "DEFAULT_RESTRICTION_MESSAGE": "convo.templates",
    "DefinitionError": "convo._errors",
    "Document": "convo._parts",
    "EchoMockInterface": "convo._interfaces",
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
    "HandoffTool": "convo.tools._handoff",
    "IfTemplate": "convo.templates",
    "Image": "convo._parts",
    "InterfaceError": "convo._errors",
    "Limits": "convo._limits",
    "LinearTemplate": "convo.templates",
    "LoopGuard": "convo.templates",
    "LoopTemplate": "convo.templates",
    "MCPServer": "convo.tools._mcp",
    "Message": "convo._messages",
    "MessageAdded": "convo.events",
    "MessageTemplate": "convo.templates",
    "MockModel": "convo.models",
    "Model": "convo.models",
    "ModelGuard": "convo.guards",
    "ModelError": "convo._errors",
    "OpenAIModel": "convo.models._openai",
    "Outcome": "convo._session",
    "ReachedEndTemplateException": "convo._errors",
    "ReasoningDelta": "convo.events",
    "RenderError": "convo._errors",
    "ReplyTruncated": "convo.events",
    "RunError": "convo._errors",
    "RunStatus": "convo._session",
    "Runner": "convo._runner",
    "ScriptError": "convo._errors",
    "ScriptedInterface": "convo._interfaces",
    "Session": "convo._session",
    "StateEntered": "convo.events",
    "StateMachineTemplate": "convo.templates",
    "SubroutineTemplate": "convo.templates",
    "SubroutineTool": "convo.templates",
    "SystemTemplate": "convo.templates",
    "Template": "convo.templates",
    "TemplateSyntaxError": "convo._errors",
    "TerminateResponse": "convo.tools",
    "Text": "convo._parts",
    "TextDelta": "convo.events",
    "Tool": "convo.tools",
    "ToolArgument": "convo.tools",
    "ToolArgumentError": "convo._errors",
    "ToolCall": "convo._messages",
    "ToolCallParseError": "convo._errors",
    "ToolContext": "convo.tools",
    "ToolDefinitionError": "convo._errors",
    "ToolResult": "convo.tools",
    "ToolRetry": "convo._errors",
    "ToolingTemplate": "convo.templates",
    "TranscriptError": "convo._errors",
    "Transition": "convo.tools",
    "TurnResult": "convo._session",
    "Usage": "convo._session",
    "UserInterface": "convo._interfaces",
    "UserTemplate": "convo.templates",
    "__version__": "convo._version",
    "load_transcript": "convo._record.transcript",
    "tool": "convo.tools",
}

__getattr__, __dir__ = lazy(__name__, _LAZY)

# What mypy reads (it cannot follow the map): the same names, pinned to the map by
# tests/docs/test_exports.py.
if TYPE_CHECKING:
    from ._approval import Approval as Approval
    from ._context import ContextWindow as ContextWindow
    from ._errors import (
        ContextLengthError as ContextLengthError,
    )
    from ._errors import (
        ConvoError as ConvoError,
    )
    from ._errors import (
        DefinitionError as DefinitionError,
    )
    from ._errors import (
        InterfaceError as InterfaceError,
    )
    from ._errors import (
        ModelError as ModelError,
    )
    from ._errors import (
        ReachedEndTemplateException as ReachedEndTemplateException,
    )
    from ._errors import (
        RenderError as RenderError,
    )
    from ._errors import (
        RunError as RunError,
    )
    from ._errors import (
        ScriptError as ScriptError,
    )
    from ._errors import (
        TemplateSyntaxError as TemplateSyntaxError,
    )
    from ._errors import (
        ToolArgumentError as ToolArgumentError,
    )
    from ._errors import (
        ToolCallParseError as ToolCallParseError,
    )
    from ._errors import (
        ToolDefinitionError as ToolDefinitionError,
    )
    from ._errors import (
        ToolRetry as ToolRetry,
    )
    from ._errors import (
        TranscriptError as TranscriptError,
    )
    from ._interfaces import EchoMockInterface as EchoMockInterface
    from ._interfaces import ScriptedInterface as ScriptedInterface
    from ._interfaces import UserInterface as UserInterface
    from ._limits import Limits as Limits
    from ._messages import Message as Message
    from ._messages import ToolCall as ToolCall
    from ._parts import Audio as Audio
    from ._parts import Document as Document
    from ._parts import Image as Image
    from ._parts import Text as Text
    from ._record.transcript import load_transcript as load_transcript
    from ._runner import Runner as Runner
    from ._session import Outcome as Outcome
    from ._session import RunStatus as RunStatus
    from ._session import Session as Session
    from ._session import TurnResult as TurnResult
    from ._session import Usage as Usage
    from ._terminal.input import CLIInterface as CLIInterface
    from ._terminal.runner import CommandLineRunner as CommandLineRunner
    from ._version import __version__ as __version__
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
    from .models import EchoModel as EchoModel
    from .models import FunctionModel as FunctionModel
    from .models import MockModel as MockModel
    from .models import Model as Model
    from .models._anthropic.model import AnthropicModel as AnthropicModel
    from .models._gemini.model import GeminiModel as GeminiModel
    from .models._openai import OpenAIModel as OpenAIModel
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
    from .tools._handoff import HandoffTool as HandoffTool
    from .tools._mcp import MCPServer as MCPServer


__all__ = sorted(_LAZY)
