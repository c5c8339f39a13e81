"""Holding a conversation in the terminal: what ``convo chat`` and ``convo run`` share.

The printer, the prompt with its slash commands, the local history, Ctrl-C, and the exit code
are set up here once; the commands only choose the template, the session and the model.
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import attrs

from .._botfile import info
from .._session import RunStatus, Session
from ..events import Event

EXIT_OK, EXIT_RUN_ERROR = 0, 1


@attrs.define(kw_only=True)
class Talk:
    """A conversation to hold: what to run it on, and where it is kept."""

    template: Any
    session: Session
    model: Any
    kind: str  # "chat" or "run": what -c / --continue look for in the history
    source: str | None = None  # the history's key of a run: the bot file's path and template
    #: What a transcript names as its source (``/save``, like ``--save``): the bot file.
    transcript_source: str = "convo chat"
    model_name: str | None = None
    history_id: int | None = None  # continuing this conversation of the history
    #: Makes the user interface, given the printer (default: the terminal, with slash commands).
    user: Callable[[Any], Any] | None = None
    writer: Any = None  # a TranscriptWriter (--save)
    continue_hint: str = "convo chat -c"
    limits: Any = None  # the bot file's Limits
    context: Any = None  # the bot file's ContextWindow
    guards: Any = ()  # the bot file's guards
    saved: Session | None = None  # the conversation this one continues (replayed first)
    tools: Any = ()  # the chat's tools, for /tools
    attached: list[Any] = attrs.Factory(list)  # files (parts) for the first message (-a)
    max_attachment_bytes: int | None = None  # /attach's limit (None: the default)


def hold(args: argparse.Namespace, talk: Talk, before: Callable[[Any], None] | None = None
         ) -> int:
    """Run the conversation in the terminal; returns the exit code. ``before(printer)`` shows
    what comes before the conversation starts."""
    from .cancel import Interrupts
    from .notices import may_ignore_tools
    from .printer import ConsolePrinter

    printer = ConsolePrinter(markdown=False if args.plain else None,
                             show_reasoning=not getattr(args, "hide_reasoning", False))
    printer.ignored_tools.enabled = may_ignore_tools(talk.model)
    recorder = _recorder(args, talk)
    interrupts = Interrupts()
    handlers = [h for h in (talk.writer, recorder) if h is not None]
    runner, commands = _runner(args, talk, printer, handlers, interrupts)
    if before is not None:
        before(printer)
    previous = signal.signal(signal.SIGINT, interrupts)
    try:
        session = runner.run(talk.session)
        while commands is not None and commands.branching is not None:
            recorder = _branched(talk, runner, commands, handlers, recorder)
            session = runner.run(commands.branched)
    except Exception:
        traceback.print_exc()  # only with --debug: raise_errors is off otherwise
        return EXIT_RUN_ERROR
    finally:
        signal.signal(signal.SIGINT, previous)
        if talk.writer is not None:
            talk.writer.close()
        if recorder is not None:
            recorder.history.close()
    if session.queued:  # typed during the last reply, after which the conversation ended
        from .._parts import shown

        info("not sent, the conversation ended first: "
             + "; ".join(repr(shown(m.content)) for m in session.queued))
    outcome = session.outcome
    if recorder is not None and outcome is not None and outcome.status == RunStatus.STOPPED:
        info(f"kept in the history: {talk.continue_hint} continues it")
    failed = outcome is not None and outcome.status == RunStatus.ERROR
    return EXIT_RUN_ERROR if failed else EXIT_OK


def _branched(talk: Talk, runner: Any, commands: Any, handlers: list[Any], recorder: Any
              ) -> Any:
    """The branch a command made goes on as a new conversation (the original stays in the
    history as it was): a new conversation of the history, the branch's messages replayed
    into it; a ``--save`` transcript keeps the conversation before the branch. Returns the
    history's new recorder; ``commands.branched`` is the session to run (its template replays
    the branch)."""
    from .._resume import Resume

    branching, commands.branching = commands.branching, None
    branch = branching.branch
    commands.sending = branching.text
    if talk.writer is not None:
        talk.writer.close()
        handlers.remove(talk.writer)
        talk.writer = None
        info("the --save transcript ends before the branch")
    given = commands.given  # the chat's system prompt: in the session, not replayed
    session = Session(branch.messages[:given], dict(branch.state),
                      approvals=dict(branch.approvals), internal=dict(branch.internal),
                      parent=branch.parent)
    branch = attrs.evolve(branch, messages=branch.messages[given:])
    if recorder is not None:
        handlers.remove(recorder)
        recorder.history.close()
        recorder = _recorder_for(talk, session)
        if recorder is not None:
            handlers.append(recorder)
    runner.template = Resume(_template_of(runner.template), branch)
    commands.branched = session
    commands.say(f"--- a branch of the conversation, before message {branch.parent['before']}"
                 " (the original stays in the history) ---")
    return recorder


def _template_of(template: Any) -> Any:
    from .._resume import Resume

    return template.template if isinstance(template, Resume) else template


def _runner(args: argparse.Namespace, talk: Talk, printer: Any, handlers: list[Any],
            interrupts: Any) -> tuple[Any, Any]:
    """The CommandLineRunner: the terminal (with slash commands) unless the talk has its own
    user interface; the transcript (--save) and the history see every event (``handlers``:
    a branch changes them). Also the slash commands, if the terminal has them."""
    from .input import CLIInterface
    from .runner import CommandLineRunner
    from .slash_commands import Commands

    commands = Commands(say=printer.say, source=talk.transcript_source)
    commands.tools = tuple(talk.tools) or _tools_of(talk.template)
    if talk.max_attachment_bytes is not None:
        commands.max_attachment_bytes = talk.max_attachment_bytes
    commands.attached = list(talk.attached)
    user = talk.user(printer) if talk.user is not None else CLIInterface(commands=commands)

    def on_event(event: Event) -> None:
        for handler in tuple(handlers):
            handler(event)

    runner = CommandLineRunner(talk.model, talk.template, user, on_event=on_event,
                               printer=printer, max_messages=args.max_messages,
                               raise_errors=args.debug, interrupts=interrupts,
                               exit_on_error=False, limits=talk.limits,
                               context=talk.context, guards=talk.guards)
    if talk.user is not None:
        return runner, None
    commands.changed = lambda: _sync(handlers)
    commands.given = len(talk.session.messages)
    commands.brancher = lambda session, before: runner._branch_given(
        session, before=before, given=commands.given)
    return runner, commands


def _sync(handlers: list[Any]) -> None:
    for handler in handlers:
        sync = getattr(handler, "sync", None)
        if callable(sync):
            sync()


def _tools_of(template: Any) -> tuple[Any, ...]:
    """Every tool of the template's agent turns, once each, in tree order (for /tools)."""
    from ..templates._tooling import ToolingTemplate
    from ..templates._tree import walk

    found: dict[int, Any] = {}
    for node, _, _ in walk(template):
        if isinstance(node, ToolingTemplate):
            found.update((id(t), t) for t in node.tools)
    return tuple(found.values())


def _recorder_for(talk: Talk, session: Session) -> Any:
    """The history's recorder of a new conversation on ``session`` (a branch)."""
    import sqlite3

    from .history import History, Recorder

    try:
        history = History.open()
        return Recorder(history, history.start(talk.kind, talk.source, talk.model_name),
                        session)
    except (OSError, sqlite3.Error) as exc:
        print(f"convo: warning: cannot keep the branch in the history: {exc}", file=sys.stderr)
        return None


def _recorder(args: argparse.Namespace, talk: Talk) -> Any:
    """The history's on_event handler (None with --no-log, or when it cannot be written)."""
    import sqlite3

    from .history import History, Recorder
    from .paths import data_dir

    if args.no_log:
        return None
    try:
        history = History.open()
        conversation = talk.history_id
        if conversation is None:
            conversation = history.start(talk.kind, talk.source, talk.model_name)
            return Recorder(history, conversation, talk.session, saved=talk.saved)
        return Recorder(history, conversation, talk.session, replaying=True, saved=talk.saved)
    except (OSError, sqlite3.Error) as exc:
        print(f"convo: warning: cannot keep the history in {data_dir()}: {exc}; "
              "going on without it (--no-log turns it off)", file=sys.stderr)
        return None
