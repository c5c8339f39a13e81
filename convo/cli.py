"""The ``convo`` command: run a template from a Python file in the terminal, show transcripts.

::

    convo run FILE[:NAME] [--model M] [--base-url URL] [--mock] [--save PATH] [--resume PATH]
    convo test FILE[:NAME] [--user "PERSONA|GOAL"] [--turns N]
    convo replay PATH
    convo models [--base-url URL]
    convo --version

Exit codes: 0 when a run ends normally (any status but ``error``), 1 when it ends with
``error``, 2 for a mistake on the command line or in the file (said in one line; ``--debug``
shows the traceback), 130 when Ctrl-C is pressed a second time.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from .botfile import UsageProblem, add_model_options
from .version import __version__

EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


# --- the command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="show tracebacks instead of one-line errors")
    parser = argparse.ArgumentParser(
        prog="convo", parents=[common],
        description="Run conversations written with convo in the terminal.",
        epilog="See docs/cli.md. Exit codes: 0 normal end, 1 the run ended with an error, "
               "2 a usage or file error, 130 interrupted twice.",
    )
    parser.add_argument("--version", action="version", version=f"convo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run", parents=[common], help="chat with a template defined in a Python file",
        description="Run the template NAME (default: template) from a Python file. The model "
                    "is OpenAI's (or any OpenAI-compatible server's) when OPENAI_API_KEY or a "
                    "base URL is set, else the file's own mock_model.",
    )
    run.add_argument("target", metavar="FILE[:NAME]",
                     help="a Python file and the name of the template in it")
    run.add_argument("--model", help="the model name (default: gpt-4o-mini)")
    run.add_argument("--base-url", metavar="URL",
                     help="an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    run.add_argument("--mock", action="store_true",
                     help="use the file's mock_model even when an API key is set")
    run.add_argument("--no-stream", action="store_true", help="do not stream replies")
    run.add_argument("--save", metavar="PATH",
                     help="write the transcript to PATH (JSON lines) as the conversation goes")
    run.add_argument("--resume", metavar="PATH",
                     help="continue the conversation saved in the transcript PATH")
    run.add_argument("--record", metavar="PATH",
                     help="record every model exchange to PATH, for ReplayModel in tests")
    run.add_argument("--demo", action="store_true",
                     help="answer with the file's demo_input instead of reading the keyboard")
    run.add_argument("--max-messages", type=int, default=1000, metavar="N",
                     help="stop the run after N new messages (default: 1000)")
    add_model_options(run)

    from .testing import trial

    trial.add_arguments(sub.add_parser(
        "test", parents=[common], help="try a bot file against a simulated user",
        description="Run the template NAME (default: template) from a Python file against a "
                    "simulated user with a persona and a goal, and show the conversation."))

    replay = sub.add_parser("replay", parents=[common], help="show a saved transcript",
                            description="Show a transcript written by convo run --save.")
    replay.add_argument("path", metavar="PATH")
    replay.add_argument("--json", action="store_true",
                        help="print the session as JSON (Session.from_json reads it)")
    graph = sub.add_parser("graph", parents=[common], help="print a template's states as Mermaid",
                           description="Print the state machines of the template NAME "
                                       "(default: template) as a Mermaid stateDiagram.")
    graph.add_argument("target", metavar="FILE[:NAME]")
    from .serve.command import add_parser as add_serve  # imports nothing heavy

    add_serve(sub, common)

    models = sub.add_parser("models", parents=[common], help="list the models a server offers",
                            description="List the models an OpenAI-compatible server offers.")
    models.add_argument("--base-url", metavar="URL",
                        help="the server (default: $OPENAI_BASE_URL, else api.openai.com)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``convo`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from .terminal import command

    try:
        if args.command == "run":
            return command.run(args)
        if args.command == "test":
            from .testing import trial

            return trial.main(args)
        if args.command == "serve":
            from .serve.command import run as serve

            return serve(args)
        if args.command == "graph":
            return _graph(args)
        if args.command == "models":
            from .terminal import models

            return models.list_models(args)
        return command.replay(args)
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


def _graph(args: argparse.Namespace) -> int:
    from .botfile import find_template, load_file, split_target
    from .errors import DefinitionError
    from .templates.graph import mermaid

    path, name = split_target(args.target)
    try:
        print(mermaid(find_template(load_file(path), path, name)), end="")
    except DefinitionError as exc:
        raise UsageProblem(f"{args.target}: {exc}") from exc
    return EXIT_OK
