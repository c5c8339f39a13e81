"""``convo run``: a conversation defined in a Python file (a bot file), in the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType
from typing import Any

from .._botfile import (
    UsageProblem,
    bot_bounds,
    choose_model,
    find_template,
    info,
    load_file,
    split_target,
)
from ._options import conversation_options


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    run = sub.add_parser(
        "run", parents=[common, conversation_options()],
        help="chat with a template defined in a Python file",
        description="Run the template NAME (default: template) from a Python file. The model "
                    "is OpenAI's (or any OpenAI-compatible server's) when OPENAI_API_KEY or a "
                    "base URL is set, else the file's own mock_model.",
    )
    run.add_argument("target", metavar="FILE[:NAME]",
                     help="a Python file and the name of the template in it")
    run.add_argument("--mock", action="store_true",
                     help="use the file's mock_model even when an API key is set")
    run.add_argument("--save", metavar="PATH",
                     help="write the transcript to PATH (JSON lines) as the conversation goes")
    run.add_argument("--resume", metavar="PATH",
                     help="continue the conversation saved in the transcript PATH")
    run.add_argument("-c", "--continue", dest="continue_", action="store_true",
                     help="continue the last conversation with this file, from the history")
    run.add_argument("--record", metavar="PATH",
                     help="record every model exchange to PATH, for ReplayModel in tests")
    run.add_argument("--demo", action="store_true",
                     help="answer with the file's demo_input instead of reading the keyboard")
    run.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    from .._terminal.conversation import Talk, hold

    if args.resume and args.continue_:
        raise UsageProblem("--resume PATH continues a saved transcript, --continue the last "
                           "conversation of the history: give one or the other")
    path, name = split_target(args.target)
    module = load_file(path)
    source = f"{Path(path).resolve()}:{name}"
    history_id, saved = _saved(args, source)
    template, session = _conversation(module, path, name, saved)
    bounds = bot_bounds(module, path)
    user = _user(args, module, path)
    if args.save and Path(args.save).exists() and not _same_file(args.save, args.resume):
        raise UsageProblem(f"{args.save} already exists: continue it with --resume "
                           f"{args.save} --save {args.save}, or choose another path")
    model, model_name = choose_model(args, module, path)
    if args.record:
        from ..models._recording import RecordingModel

        model = RecordingModel(model, args.record)
    talk = Talk(template=template, session=session, model=model, kind="run", source=source,
                model_name=model_name, history_id=history_id, user=user,
                writer=_writer(args, session, saved), continue_hint=f"convo run {args.target} -c",
                saved=saved, transcript_source=args.target,
                **bounds)
    if model_name is not None:
        info(model_name)
    where = args.resume or "the history"
    code = hold(args, talk, before=None if saved is None else lambda printer: printer.note(
        f"resuming {where}: replaying {len(saved.messages)} saved messages"))
    if args.save:
        stopped = talk.session.outcome is not None and talk.session.outcome.status == "stopped"
        hint = f" (continue it with --resume {args.save})" if stopped else ""
        info(f"transcript saved to {args.save}{hint}")
    return code


def _saved(args: argparse.Namespace, source: str) -> tuple[int | None, Any]:
    """The conversation to continue: from --resume PATH, or the history's last (--continue)."""
    from .._errors import TranscriptError
    from .._record.transcript import read_transcript

    if args.resume:
        try:
            return None, read_transcript(args.resume).session
        except TranscriptError as exc:
            raise UsageProblem(str(exc)) from exc
    if not args.continue_:
        return None, None
    if args.no_log:
        raise UsageProblem("--continue picks up a conversation of the local history, which "
                           "--no-log turns off: give one or the other")
    from .._terminal.history import History
    from .._terminal.paths import data_dir

    history = History.open()
    try:
        last = history.last("run", source)
    finally:
        history.close()
    if last is None:
        raise UsageProblem(f"--continue: no conversation with {args.target} in the history "
                           f"yet ({data_dir()})")
    return last


def _conversation(module: ModuleType, path: str, name: str, saved: Any) -> tuple[Any, Any]:
    """The template to run and the session to run it on (resuming ``saved``, if any)."""
    from .._resume import resume
    from .._session import Session

    template = find_template(module, path, name)
    state = getattr(module, "state", None) or {}
    if not isinstance(state, dict):
        raise UsageProblem(f"{path}: state must be a dict, got {type(state).__name__}")
    if saved is None:
        return template, Session(state=dict(state))
    return resume(template, saved)


def _user(args: argparse.Namespace, module: ModuleType, path: str) -> Any:
    """With --demo, what makes the user interface (given the printer): the file's demo_input
    and demo_approvals answer; else None, the terminal."""
    if not args.demo:
        return None
    demo = getattr(module, "demo_input", None)
    if not isinstance(demo, list | tuple):
        raise UsageProblem(f"--demo: {path} defines no demo_input (a list of strings)")
    approvals = getattr(module, "demo_approvals", ())
    if not isinstance(approvals, list | tuple):
        raise UsageProblem(f"--demo: {path}: demo_approvals must be a list of answers (\"y\", "
                           f"\"n\", a reason to reject, True/False), got "
                           f"{type(approvals).__name__}")

    def user(printer: Any) -> Any:
        from .._terminal.demo import DemoInterface

        return DemoInterface(path, demo, approvals, note=printer.note, say=printer.say)

    return user


def _writer(args: argparse.Namespace, session: Any, saved: Any) -> Any:
    from .._errors import TranscriptError
    from .._record.transcript import TranscriptWriter

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
