"""Tools: definitions, ``@tool``, the termination family, and the registry.

Schemas and validation come from pydantic (``schema.py``, ``validation.py``), imported when the
first tool is built; ``_context.py`` is what a tool sees of the conversation; ``output.py`` the
final-output tool of typed turns.
"""

from .._faces import home as _home
from ._base import TerminateResponse, Tool, ToolArgument, ToolResult, to_text
from ._context import ToolContext
from ._decorator import FunctionTool, tool
from ._registry import ToolRegistry, registry
from ._termination import (
    EndConversationTool,
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
)
from ._toolset import Toolset
from ._transition import Transition

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
    "Toolset",
    "Transition",
    "registry",
    "to_text",
    "tool",
]

_home(__name__, __all__, globals())
