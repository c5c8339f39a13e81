"""``convo replay``: show a transcript saved by ``convo run --save`` or ``/save``."""

from __future__ import annotations

import argparse
from typing import Any

from .._botfile import UsageProblem

EXIT_OK = 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    replay = sub.add_parser("replay", parents=[common], help="show a saved transcript",
                            description="Show a transcript written by convo run --save or "
                                        "the chat's /save.")
    replay.add_argument("path", metavar="PATH")
    replay.add_argument("--json", action="store_true",
                        help="print the session as JSON (Session.from_json reads it)")
    replay.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    from .._errors import TranscriptError
    from .._record.transcript import read_transcript
    from .._terminal.printer import ConsolePrinter

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
    elif transcript.saved_at is not None:
        printer.note(f"saved with /save at {transcript.saved_at} while the conversation went "
                     "on: what came after is not in this file")
    else:
        printer.note("no outcome recorded: the run was killed, or is still going")
    return EXIT_OK
