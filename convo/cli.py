"""The ``convo`` command: run a template from a Python file in the terminal, show transcripts.

::

    convo run FILE[:NAME] [--model M] [--base-url URL] [--mock] [--save PATH] [--resume PATH]
    convo replay PATH
    convo graph FILE[:NAME]
    convo --version

Exit codes: 0 when a run ends normally (any status but ``error``), 1 when it ends with
``error``, 2 for a mistake on the command line or in the file (said in one line; ``--debug``
shows the traceback), 130 when Ctrl-C is pressed a second time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from . import __version__

EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_MODULE_NAME = "__convo_file__"


class UsageProblem(Exception):
    """A mistake by the person running the command: reported in one line, exit code 2."""


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

    replay = sub.add_parser("replay", parents=[common], help="show a saved transcript",
                            description="Show a transcript written by convo run --save.")
    replay.add_argument("path", metavar="PATH")
    replay.add_argument("--json", action="store_true",
                        help="print the session as JSON (Session.from_json reads it)")

    graph = sub.add_parser("graph", parents=[common], help="print a template's states as Mermaid",
                           description="Print the state machines of the template NAME "
                                       "(default: template) as a Mermaid stateDiagram.")
    graph.add_argument("target", metavar="FILE[:NAME]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``convo`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "graph":
            return _graph(args)
        return _replay(args)
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


# --- convo run -------------------------------------------------------------------------------


def split_target(target: str) -> tuple[str, str]:
    """``"file.py:name"`` → ``("file.py", "name")``; the name defaults to ``template``."""
    path, sep, name = target.rpartition(":")
    if sep and name.isidentifier() and path:
        return path, name
    return target, "template"


def load_file(path: str) -> ModuleType:
    """Import a Python file as a module; any failure becomes a one-line ``UsageProblem``."""
    file = Path(path)
    if not file.is_file():
        where = "is a directory" if file.is_dir() else "does not exist"
        raise UsageProblem(f"{path} {where}: give a Python file that defines a template")
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, file)
    if spec is None or spec.loader is None:
        raise UsageProblem(f"{path} cannot be imported as Python (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module
    sys.path.insert(0, str(file.resolve().parent))  # the file may import its neighbours
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UsageProblem(f"{path}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}") from exc
    except (Exception, SystemExit) as exc:
        line = _line_in(exc, file)
        at = f", line {line}" if line else ""
        raise UsageProblem(f"{path}{at} raised {type(exc).__name__}: {exc} while loading "
                           "(--debug shows the traceback)") from exc
    return module


def _line_in(exc: BaseException, file: Path) -> int | None:
    """The last line of ``file`` in the exception's traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file.resolve():
            line = frame.lineno
    return line


def find_template(module: ModuleType, path: str, name: str) -> Any:
    from .templates.base import Template

    templates = sorted(k for k, v in vars(module).items() if isinstance(v, Template))
    if not hasattr(module, name):
        if templates:
            defined = "it defines " + ", ".join(templates)
            hint = f"; run one with {path}:{templates[0]}"
        else:
            defined, hint = "it defines no templates at all", ""
        raise UsageProblem(f"{path} has no template named {name!r}: {defined}{hint}")
    obj = getattr(module, name)
    if not isinstance(obj, Template):
        others = f" (templates in it: {', '.join(templates)})" if templates else ""
        raise UsageProblem(f"{path}:{name} is a {type(obj).__name__}, not a convo Template"
                           f"{others}")
    return obj


def choose_model(args: argparse.Namespace, module: ModuleType, path: str
                 ) -> tuple[Any, str | None]:
    """The model to run on, and a few words saying which it is (None: said already)."""
    key = os.environ.get("OPENAI_API_KEY")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if args.mock or not (key or base_url):
        mock = getattr(module, "mock_model", None)
        why = "--mock" if args.mock else "no OPENAI_API_KEY or --base-url"
        if mock is None:
            raise UsageProblem(
                f"{why}, and {path} defines no mock_model to run offline: set OPENAI_API_KEY, "
                f"pass --base-url URL, or define mock_model = MockModel([...]) in {path}"
            )
        if not callable(getattr(mock, "complete", None)):
            raise UsageProblem(f"{path}: mock_model is a {type(mock).__name__}, not a model "
                               "(MockModel, FunctionModel, ...)")
        _info(f"{why}: running offline on {path}'s mock_model")
        return mock, None
    from . import OpenAIModel

    kw: dict[str, Any] = {"stream": not args.no_stream}
    if args.model:
        kw["model"] = args.model
    if base_url:
        kw["base_url"] = base_url
    model = OpenAIModel(**kw)
    return model, f"model {model.model} at {base_url or 'api.openai.com'}"


def _info(text: str) -> None:
    print(f"convo: {text}", file=sys.stderr, flush=True)


class _Interrupts:
    """SIGINT: the first Ctrl-C cancels (KeyboardInterrupt ends the run ``stopped``); a
    second one quits at once, in case cancelling hangs."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            raise KeyboardInterrupt
        os.write(2, b"\nconvo: interrupted twice, quitting\n")
        os._exit(EXIT_INTERRUPTED)


def _run(args: argparse.Namespace) -> int:
    from .interfaces.console import CommandLineRunner
    from .interfaces.printer import ConsolePrinter
    from .session import RunStatus

    path, name = split_target(args.target)
    module = load_file(path)
    template, session, saved = _conversation(args, module, path, name)
    user = _user(args, module, path)
    if args.save and Path(args.save).exists() and not _same_file(args.save, args.resume):
        raise UsageProblem(f"{args.save} already exists: continue it with --resume "
                           f"{args.save} --save {args.save}, or choose another path")
    model, model_name = choose_model(args, module, path)
    if args.record:
        from .testing.replay import RecordingModel

        model = RecordingModel(model, args.record)
    writer = _writer(args, session, saved)
    printer = ConsolePrinter()
    runner = CommandLineRunner(model, template, user, on_event=writer, printer=printer,
                               max_messages=args.max_messages, raise_errors=args.debug)
    if model_name is not None:
        _info(model_name)
    if saved is not None:
        printer.note(f"resuming {args.resume}: replaying {len(saved.messages)} saved messages")
    previous = signal.signal(signal.SIGINT, _Interrupts())
    try:
        session = runner.run(session)
    except Exception:
        traceback.print_exc()  # only with --debug: raise_errors is off otherwise
        return EXIT_RUN_ERROR
    finally:
        if writer is not None:
            writer.close()
        signal.signal(signal.SIGINT, previous)
    outcome = session.outcome
    if args.save:
        stopped = outcome is not None and outcome.status == RunStatus.STOPPED
        hint = f" (continue it with --resume {args.save})" if stopped else ""
        _info(f"transcript saved to {args.save}{hint}")
    failed = outcome is not None and outcome.status == RunStatus.ERROR
    return EXIT_RUN_ERROR if failed else EXIT_OK


def _conversation(args: argparse.Namespace, module: ModuleType, path: str, name: str
                  ) -> tuple[Any, Any, Any]:
    """The template to run, the session to run it on, and the saved session (--resume)."""
    from .session import Session
    from .transcript import TranscriptError, read_transcript, resume

    template = find_template(module, path, name)
    state = getattr(module, "state", None) or {}
    if not isinstance(state, dict):
        raise UsageProblem(f"{path}: state must be a dict, got {type(state).__name__}")
    if not args.resume:
        return template, Session(state=dict(state)), None
    try:
        saved = read_transcript(args.resume).session
    except TranscriptError as exc:
        raise UsageProblem(str(exc)) from exc
    template, session = resume(template, saved)
    return template, session, saved


def _user(args: argparse.Namespace, module: ModuleType, path: str) -> Any:
    from .interfaces.cli import CLIInterface
    from .interfaces.scripted import ScriptedInterface

    if not args.demo:
        return CLIInterface()
    demo = getattr(module, "demo_input", None)
    if not isinstance(demo, list | tuple):
        raise UsageProblem(f"--demo: {path} defines no demo_input (a list of strings)")
    return ScriptedInterface(demo)


def _writer(args: argparse.Namespace, session: Any, saved: Any) -> Any:
    from .transcript import TranscriptWriter

    if not args.save:
        return None
    try:
        if saved is not None and _same_file(args.save, args.resume):
            return TranscriptWriter.append(args.save, session, saved)
        return TranscriptWriter.create(args.save, session, source=args.target)
    except OSError as exc:
        raise UsageProblem(f"cannot write {args.save}: {exc.strerror}") from exc


def _same_file(a: str, b: str | None) -> bool:
    return b is not None and Path(a).resolve() == Path(b).resolve()


def _graph(args: argparse.Namespace) -> int:
    from .errors import DefinitionError
    from .templates.graph import mermaid

    path, name = split_target(args.target)
    try:
        print(mermaid(find_template(load_file(path), path, name)), end="")
    except DefinitionError as exc:
        raise UsageProblem(f"{args.target}: {exc}") from exc
    return EXIT_OK


# --- convo replay ----------------------------------------------------------------------------


def _replay(args: argparse.Namespace) -> int:
    from .interfaces.printer import ConsolePrinter
    from .transcript import TranscriptError, read_transcript

    try:
        transcript = read_transcript(args.path)
    except TranscriptError as exc:
        raise UsageProblem(str(exc)) from exc
    session = transcript.session
    if args.json:
        print(session.to_json(indent=2))
        return EXIT_OK
    header = transcript.header
    printer = ConsolePrinter()
    printer.note(f"transcript of {header.get('source') or 'a conversation'}, started "
                 f"{header.get('started') or '?'} (convo {header.get('convo') or '?'})")
    for message in session.messages:
        printer.show(message)
    if transcript.cut_off:
        printer.note("the last line was cut off: the process was killed while writing it")
    if session.outcome is not None:
        printer.note(f"conversation {session.outcome.describe()}")
    else:
        printer.note("no outcome recorded: the run was killed, or is still going")
    return EXIT_OK

