"""Templates: the building blocks of a conversation."""

from .._faces import home as _home
from .._requests import AskUser, CallModel
from ._base import Template
from ._control import BreakTemplate, IfTemplate, LinearTemplate, LoopTemplate
from ._end import EndTemplate
from ._execute import ExecuteToolTemplate
from ._graph import mermaid
from ._messages import (
    AssistantTemplate,
    GenerateTemplate,
    MessageTemplate,
    SystemTemplate,
    UserTemplate,
)
from ._states import GotoTemplate, StateMachineTemplate, current_state
from ._subroutine import SubroutineTemplate
from ._subroutine_tool import SubroutineTool
from ._tooling import DEFAULT_RESTRICTION_MESSAGE, LoopGuard, ToolingTemplate

__all__ = [
    "DEFAULT_RESTRICTION_MESSAGE",
    "AskUser",
    "AssistantTemplate",
    "BreakTemplate",
    "CallModel",
    "EndTemplate",
    "ExecuteToolTemplate",
    "GenerateTemplate",
    "GotoTemplate",
    "IfTemplate",
    "LinearTemplate",
    "LoopGuard",
    "LoopTemplate",
    "MessageTemplate",
    "StateMachineTemplate",
    "SubroutineTemplate",
    "SubroutineTool",
    "SystemTemplate",
    "Template",
    "ToolingTemplate",
    "UserTemplate",
    "current_state",
    "mermaid",
]

_home(__name__, __all__, globals())
