"""``convo._run.state.watch_runs``: every run started while a watcher is on gets its listener,
besides the runner's ``on_event``; a listener that does not hear messages is spared the
``MessageAdded`` events (and the run does not make them for it alone)."""

from __future__ import annotations

from typing import Any

from convo import LinearTemplate, MockModel, Runner, SystemTemplate, UserTemplate
from convo._run.state import RunState, watch_runs
from convo.events import Event, MessageAdded

BOT = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("Hi."), SystemTemplate("Go.")])


class Listener:
    def __init__(self, hears_messages: bool) -> None:
        self.hears_messages = hears_messages
        self.events: list[str] = []

    def __call__(self, event: Event) -> None:
        self.events.append(type(event).__name__)


def run_watched(hears_messages: bool, on_event: Any = None) -> Listener:
    listener = Listener(hears_messages)
    stop = watch_runs(lambda state: listener)
    try:
        Runner(MockModel([]), BOT, on_event=on_event).run()
    finally:
        stop()
    return listener


def test_a_watchers_listener_hears_every_event_by_default() -> None:
    assert run_watched(True).events == ["MessageAdded"] * 3 + ["RunEnded"]


def test_a_listener_that_does_not_hear_messages_gets_the_other_events() -> None:
    assert run_watched(False).events == ["RunEnded"]


def test_the_runners_on_event_still_hears_the_messages() -> None:
    seen: list[Event] = []
    listener = run_watched(False, seen.append)
    assert [type(e).__name__ for e in seen] == ["MessageAdded"] * 3 + ["RunEnded"]
    assert [e.index for e in seen if isinstance(e, MessageAdded)] == [0, 1, 2]
    assert listener.events == ["RunEnded"]


def test_no_message_event_is_made_when_only_such_a_listener_listens() -> None:
    states: list[RunState] = []

    def watcher(state: RunState) -> Listener:
        states.append(state)
        return Listener(False)

    stop = watch_runs(watcher)
    try:
        Runner(MockModel([]), BOT).run()
    finally:
        stop()
    [state] = states
    assert state.on_message is None and state.on_event is not None
