"""Shared by the tests that run the examples/ bots in process: a fresh copy of an example's
module, and a saved conversation resumed and continued in its transcript."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from convo import MockModel, Runner, ScriptedInterface, Session
from convo._resume import resume
from convo._transcript import TranscriptWriter
from convo.events import Event

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str) -> ModuleType:
    """examples/``name``.py, executed afresh (its scripted model unused)."""
    spec = importlib.util.spec_from_file_location(f"convo_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resume_saved(bot: ModuleType, saved: Session, path: Path, model: MockModel
                 ) -> tuple[Session, list[Event]]:
    """``saved`` (read from the transcript at ``path``) resumed with ``bot``'s template and
    run on with the rest of its demo input, each event appended to ``path``: the session and
    the events it ran with."""
    events: list[Event] = []
    template, session = resume(bot.template, saved)
    writer = TranscriptWriter.append(path, session, saved)

    def on_event(event: Event) -> None:
        events.append(event)
        writer(event)

    try:
        Runner(model, template, ScriptedInterface(bot.demo_input[1:]), on_event=on_event
               ).run(session)
    finally:
        writer.close()
    return session, events
