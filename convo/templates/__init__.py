"""Templates: the building blocks of a conversation."""

from .base import Template
from .control import BreakTemplate, IfTemplate, LinearTemplate, LoopTemplate
from .end import EndTemplate
from .messages import (
    AssistantTemplate,
    GenerateTemplate,
    MessageTemplate,
    SystemTemplate,
    UserTemplate,
)

__all__ = [
    "AssistantTemplate",
    "BreakTemplate",
    "EndTemplate",
    "GenerateTemplate",
    "IfTemplate",
    "LinearTemplate",
    "LoopTemplate",
    "MessageTemplate",
    "SystemTemplate",
    "Template",
    "UserTemplate",
]
