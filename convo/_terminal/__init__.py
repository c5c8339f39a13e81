"""Everything terminal: reading the user's input, showing the conversation as it happens,
the ``CommandLineRunner``, and the ``convo run`` / ``convo replay`` commands."""

from .input import CLIInterface
from .printer import ConsolePrinter
from .runner import CommandLineRunner

__all__ = ["CLIInterface", "CommandLineRunner", "ConsolePrinter"]
