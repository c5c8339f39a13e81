"""User interfaces: the protocol, the terminal, and scripted ones for tests."""

from .base import UserInterface
from .cli import CLIInterface
from .scripted import EchoMockInterface, ScriptedInterface

__all__ = ["CLIInterface", "EchoMockInterface", "ScriptedInterface", "UserInterface"]
