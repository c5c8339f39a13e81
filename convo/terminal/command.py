"""``convo run`` and ``convo replay``: a conversation in the terminal, and a saved one shown."""

from __future__ import annotations

import argparse
import os
import signal
import traceback
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from ..botfile import (
    UsageProblem,
    bot_limits,
    choose_model,
    find_template,
    info,
    load_file,
    split_target,
)

EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Interrupts:
    """SIGINT: the first Ctrl-C cancels (KeyboardInterrupt ends the run ``stopped``); a
    second one quits at once, in case cancelling hangs."""

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        """A Ctrl-C that was answered (an approval prompt rejects) does not count."""
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            raise KeyboardInterrupt
        os.write(2, b"\nconvo: interrupted twice, quitting\n")
        os._exit(EXIT_INTERRUPTED)


def run(args: argparse.Namespace) -> int:
    from ..session import RunStatus
    from .printer import ConsolePrinter
    from .runner import CommandLineRunner

    path, name = split_target(args.target)
    module = load_file(path)
    template, session, saved = _conversation(args, module, path, name)
    user = _user(args, module, path)
    if args.save and Path(args.save).exists() and not _same_file(args.save, args.resume):
        raise UsageProblem(f"{args.save} already exists: continue it with --resume "
                           f"{args.save} --save {args.save}, or choose another path")
    model, model_name = choose_model(args, module, path)
    if args.record:
        from ..testing.replay import RecordingModel

        model = RecordingModel(model, args.record)
    writer = _writer(args, session, saved)
    printer = ConsolePrinter()
    printer.ignored_tools.enabled = getattr(model, "tool_format", "native") == "native"
    runner = CommandLineRunner(model, template, user, on_event=writer, printer=printer,
                               max_messages=args.max_messages, raise_errors=args.debug,
                               limits=bot_limits(module, path))
    if model_name is not None:
        info(model_name)
    if saved is not None:
        printer.note(f"resuming {args.resume}: replaying {len(saved.session.messages)} saved "
                     "messages")
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
        info(f"transcript saved to {args.save}{hint}")
    failed = outcome is not None and outcome.status == RunStatus.ERROR
    return EXIT_RUN_ERROR if failed else EXIT_OK


def _conversation(args: argparse.Namespace, module: ModuleType, path: str, name: str
                  ) -> tuple[Any, Any, Any]:
    """The template to run, the session to run it on, and the saved transcript (--resume)."""
    from ..errors import TranscriptError
    from ..resume import resume
    from ..session import Session
    from ..transcript import read_transcript

    template = find_template(module, path, name)
    state = getattr(module, "state", None) or {}
    if not isinstance(state, dict):
        raise UsageProblem(f"{path}: state must be a dict, got {type(state).__name__}")
    if not args.resume:
        return template, Session(state=dict(state)), None
    try:
        saved = read_transcript(args.resume)
    except TranscriptError as exc:
        raise UsageProblem(str(exc)) from exc
    template, session = resume(template, saved.session)
    return template, session, saved


def _user(args: argparse.Namespace, module: ModuleType, path: str) -> Any:
    from ..interfaces.scripted import ScriptedInterface
    from .input import CLIInterface

    if not args.demo:
        return CLIInterface()
    demo = getattr(module, "demo_input", None)
    if not isinstance(demo, list | tuple):
        raise UsageProblem(f"--demo: {path} defines no demo_input (a list of strings)")
    return ScriptedInterface(demo, approvals=getattr(module, "demo_approvals", ()))


def _writer(args: argparse.Namespace, session: Any, saved: Any) -> Any:
    from ..errors import TranscriptError
    from ..transcript import TranscriptWriter

    if not args.save:
        return None
    try:
        if saved is not None and _same_file(args.save, args.resume):
            return TranscriptWriter.append(args.save, session, saved)
        return TranscriptWriter.create(args.save, session, source=args.target)
    except OSError as exc:
        raise UsageProblem(f"cannot write {args.save}: {exc.strerror}") from exc
    except (TranscriptError, TypeError) as exc:  # another run writes it; a state not JSON
        raise UsageProblem(str(exc)) from exc


def _same_file(a: str, b: str | None) -> bool:
    return b is not None and Path(a).resolve() == Path(b).resolve()


def replay(args: argparse.Namespace) -> int:
    from ..errors import TranscriptError
    from ..transcript import read_transcript
    from .printer import ConsolePrinter

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
