"""User interfaces: the protocol, and scripted ones for tests. The terminal's is in
``convo._terminal``."""

from .base import UserInterface
from .scripted import EchoMockInterface, ScriptedInterface

__all__ = ["EchoMockInterface", "ScriptedInterface", "UserInterface"]
