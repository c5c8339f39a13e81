"""convo: conversations with language models as code.

Composable templates describe a conversation; a Runner drives it against a model and a user
interface; every run ends with an Outcome that says why.
"""

from __future__ import annotations

from typing import Any

from .errors import (
    ConvoError,
    DefinitionError,
    ModelError,
    ReachedEndTemplateException,
    RenderError,
    RunError,
    ScriptError,
    TemplateSyntaxError,
    ToolDefinitionError,
)
from .events import Event
from .interfaces import CLIInterface, EchoMockInterface, ScriptedInterface, UserInterface
from .interfaces.console import CommandLineRunner
from .messages import Message, ToolCall
from .models import EchoModel, FunctionModel, MockModel, Model
from .runner import Runner
from .session import Outcome, RunStatus, Session, TurnResult, Usage
from .templates import (
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    GenerateTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    MessageTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # OpenAIModel imports the openai SDK, which is slow: only when it is asked for.
    if name == "OpenAIModel":
        from .models.openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module 'convo' has no attribute {name!r}")


__all__ = [
    "AssistantTemplate",
    "BreakTemplate",
    "CLIInterface",
    "CommandLineRunner",
    "ConvoError",
    "DefinitionError",
    "EchoMockInterface",
    "EchoModel",
    "EndTemplate",
    "Event",
    "FunctionModel",
    "GenerateTemplate",
    "IfTemplate",
    "LinearTemplate",
    "LoopTemplate",
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
    "SystemTemplate",
    "Template",
    "TemplateSyntaxError",
    "ToolCall",
    "ToolDefinitionError",
    "TurnResult",
    "Usage",
    "UserInterface",
    "UserTemplate",
    "__version__",
]
