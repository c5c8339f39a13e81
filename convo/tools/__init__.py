"""Tools: definitions, ``@tool``, the termination family, and the registry.

Schemas and validation come from pydantic (``schema.py``, ``validation.py``), imported when the
first tool is built; ``context.py`` is what a tool sees of the conversation; ``output.py`` the
final-output tool of typed turns.
"""

from .._faces import home as _home
from .base import Tool, ToolArgument, ToolResult
from .context import ToolContext
from .decorator import FunctionTool, tool
from .endings import TerminateResponse
from .registry import ToolRegistry, registry
from .termination import (
    EndConversationTool,
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
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

_home(__name__, __all__, globals())
