"""Tools: definitions, ``@tool``, the termination family, and the registry."""

from .base import Tool, ToolArgument, ToolResult
from .context import ToolContext
from .decorator import FunctionTool, tool
from .registry import ToolRegistry, registry
from .termination import (
    EndConversationTool,
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
    TerminateResponse,
)
from .transition import Transition

__all__ = [
    "EndConversationTool",
    "FinishResponseTool",
    "FinishTaskTool",
    "FinishTool",
    "FunctionTool",
    "TerminateResponse",
    "Tool",
    "ToolArgument",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "Transition",
    "registry",
    "tool",
]
