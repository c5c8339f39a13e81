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

from ..botfile import info
from ..events import Event
from ..session import RunStatus, Session

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
    runner = _runner(args, talk, printer, recorder, interrupts)
    if before is not None:
        before(printer)
    previous = signal.signal(signal.SIGINT, interrupts)
    try:
        session = runner.run(talk.session)
    except Exception:
        traceback.print_exc()  # only with --debug: raise_errors is off otherwise
        return EXIT_RUN_ERROR
    finally:
        signal.signal(signal.SIGINT, previous)
        if talk.writer is not None:
            talk.writer.close()
        if recorder is not None:
            recorder.history.close()
    outcome = session.outcome
    if recorder is not None and outcome is not None and outcome.status == RunStatus.STOPPED:
        info(f"kept in the history: {talk.continue_hint} continues it")
    failed = outcome is not None and outcome.status == RunStatus.ERROR
    return EXIT_RUN_ERROR if failed else EXIT_OK


def _runner(args: argparse.Namespace, talk: Talk, printer: Any, recorder: Any,
            interrupts: Any) -> Any:
    """The CommandLineRunner: the terminal (with slash commands) unless the talk has its own
    user interface; the transcript (--save) and the history see every event."""
    from .input import CLIInterface
    from .runner import CommandLineRunner
    from .slash_commands import Commands

    commands = Commands(say=printer.say, source=talk.transcript_source,
                        changed=None if recorder is None else recorder.sync)
    commands.tools = tuple(talk.tools) or _tools_of(talk.template)
    if talk.max_attachment_bytes is not None:
        commands.max_attachment_bytes = talk.max_attachment_bytes
    commands.attached = list(talk.attached)
    user = talk.user(printer) if talk.user is not None else CLIInterface(commands=commands)
    handlers = [h for h in (talk.writer, recorder) if h is not None]

    def on_event(event: Event) -> None:
        for handler in handlers:
            handler(event)

    return CommandLineRunner(talk.model, talk.template, user, on_event=on_event,
                             printer=printer, max_messages=args.max_messages,
                             raise_errors=args.debug, interrupts=interrupts,
                             exit_on_error=False, limits=talk.limits,
                             context=talk.context, guards=talk.guards)


def _tools_of(template: Any) -> tuple[Any, ...]:
    """Every tool of the template's agent turns, once each, in tree order (for /tools)."""
    from ..templates.tooling import ToolingTemplate
    from ..templates.tree import walk

    found: dict[int, Any] = {}
    for node, _, _ in walk(template):
        if isinstance(node, ToolingTemplate):
            found.update((id(t), t) for t in node.tools)
    return tuple(found.values())


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
