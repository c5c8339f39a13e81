"""Templates: the building blocks of a conversation."""

from .._faces import home as _home
from .base import Template
from .control import BreakTemplate, IfTemplate, LinearTemplate, LoopTemplate
from .end import EndTemplate
from .execute import ExecuteToolTemplate
from .guard import LoopGuard
from .messages import (
    AssistantTemplate,
    GenerateTemplate,
    MessageTemplate,
    SystemTemplate,
    UserTemplate,
)
from .states import GotoTemplate, StateMachineTemplate
from .subroutine import SubroutineTemplate
from .subroutine_tool import SubroutineTool
from .tooling import DEFAULT_RESTRICTION_MESSAGE, ToolingTemplate

__all__ = [
    "DEFAULT_RESTRICTION_MESSAGE",
    "AssistantTemplate",
    "BreakTemplate",
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
]

_home(__name__, __all__, globals())
