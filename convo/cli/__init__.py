"""The ``convo`` command: chat in the terminal, run a template from a Python file, show
transcripts.

::

    convo chat [-m MODEL] [-s SYSTEM] [--base-url URL] [--tools FILE] [-c] [--plain] [--no-log]
    convo run FILE[:NAME] [--model M] [--base-url URL] [--mock] [--save PATH] [--resume PATH]
                          [--demo]
    convo serve FILE[:NAME] [--host H] [--port P] [--store URL] [--workers N] [--token T]
    convo mcp FILE[:NAME] [--tool-name NAME] [--store URL]
    convo test FILE[:NAME] [--user "PERSONA|GOAL"] [--turns N]
    convo eval FILE[:NAME] SCENARIOS.yaml [--repeat N] [--junit PATH] [--cassette PATH] ...
    convo replay PATH
    convo graph FILE[:NAME]
    convo models [--base-url URL]
    convo feedback export [--store URL] [--since ISO]
    convo worker FILE[:NAME] [--temporal HOST:PORT] [--task-queue Q] [--store URL]
    convo --version
    convo COMMAND --help    (every option; chat, run and serve take the model's settings too)

Each command is a module of this package, named for it (``convo.cli._chat`` … ``convo.cli._eval``;
``run.py`` is ``convo run``, ``test.py`` is ``convo test``), with ``add_parser(subparsers,
common)`` (which sets ``main`` as the parser's default) and ``main(args) -> exit code``; adding
a command is one module and one line in ``COMMANDS``. ``options.py`` holds the options several
commands share, ``otel.py`` the ``--otel`` flags. Building the parsers (every ``--help``) imports
the command modules, so these import at their top only what their parsers need; what a command
runs (the runner, templates, models, asyncio, the eval cassette) is imported in its ``main``.

Exit codes: 0 when a run ends normally (any status but ``error``), 1 when it ends with
``error``, 2 for a mistake on the command line or in the file (said in one line; ``--debug``
shows the traceback), 130 when Ctrl-C is pressed a second time.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Final

from .._botfile import UsageProblem
from .._version import __version__
from ._otel import setup as setup_otel

EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: The modules of the commands, in the order ``convo --help`` lists them.
COMMANDS: Final = ("convo.cli._chat", "convo.cli._run", "convo.cli._serve", "convo.cli._mcp",
                   "convo.cli._test", "convo.cli._eval", "convo.cli._replay", "convo.cli._graph",
                   "convo.cli._models", "convo.cli._feedback", "convo.cli._worker")


EPILOG: Final = """\
Each command has its own options: convo COMMAND --help (for example, convo run --help).
In a chat, /help lists the slash commands and keys.

Without OPENAI_API_KEY (or --base-url URL of an OpenAI-compatible server), chat answers with
an offline echo and run, serve and test use the file's own mock_model.

examples:
  convo chat                            chat with a model
  convo chat -c                         continue the last chat
  convo run bot.py                      hold the conversation defined in bot.py
  convo run bot.py --save chat.jsonl    ... and write its transcript as it goes
  convo replay chat.jsonl               show a transcript again
  convo serve bot.py                    serve bot.py at http://127.0.0.1:8000 (serve extra)
  convo mcp bot.py                      serve bot.py as an MCP tool over stdio
  convo test bot.py                     try bot.py against a simulated user
  convo eval bot.py scenarios.yaml      pass rates of bot.py's scenarios (eval extra)
  convo graph bot.py                    print bot.py's state machines as Mermaid
  convo models --base-url URL           list the models of an OpenAI-compatible server
  convo feedback export                 the ratings of convo serve's replies, as JSON lines
  convo worker bot.py --temporal H:P    run bot.py's conversations on Temporal (temporal extra)

exit codes: 0 normal end, 1 the run ended with an error, 2 a usage or file error,
130 interrupted twice."""


class CommandParser(argparse.ArgumentParser):
    """The parser of one command: an argument it does not know is refused with the command's
    own usage (``convo chat: error: ...``), not left to the top-level parser, whose usage
    says nothing of the command's options."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="show tracebacks instead of one-line errors")
    parser = argparse.ArgumentParser(
        prog="convo", parents=[common],
        description="Hold conversations written with convo: in the terminal, over HTTP, "
                    "against a simulated user.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"convo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``convo`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        setup_otel(args)
        code: int = args.main(args)
        return code
    except UsageProblem as exc:
        if args.debug:
            traceback.print_exc()
        print(f"convo: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nconvo: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `convo replay x | head`
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # a failure outside the conversation: one line, not a traceback
        if args.debug:
            traceback.print_exc()
        print(f"convo: error: {type(exc).__name__}: {exc} (--debug shows the traceback)",
              file=sys.stderr)
        return EXIT_RUN_ERROR
