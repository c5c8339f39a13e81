"""The one driver: a pump that feeds a template's generator, and the loops that answer it.

``Driver.step(answer)`` sends the answer to the last request into the template's generator and
runs it to its next request, applying every message and event on the way (``RunState``); it
returns ``None`` once the run is over (its ``Outcome`` is on the session). ``Driver.fail(exc)``
hands it the failure of answering instead: the run ends with it.

``drive`` and ``adrive`` are the loops every front end uses (``Runner.run``/``arun``, the
terminal, serving, a rebuild): step, have the answerer answer, step again, until the run ends
or the answerer says ``Pause`` (a served conversation waits for a person, or for a retry).

A guard check (``CheckGuards``) that no guard looks at is answered inside the pump, and so is
one whose guards are all plain functions (``convo._run.guarding.inline``): only a
``ModelGuard``'s or an ``async def`` check travels to the answerers. A replay answers first, from
what was stored, either way. When the run's output guards are all plain functions, the pump
checks a model's reply with them as it comes in (``convo._run.guarding.at_call``): the
template does not ask, and no request travels up its frames for it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, cast

from .._internal import STATE_UNDO, rewound
from .._messages import Message
from .._requests import CallModel, CheckGuards, ChildMessage, Flow, Request, TakeSteered
from ..events import Event
from .answerer import Pause, steered_from_session
from .guarding import at_call, inline
from .stack import NOTHING, Answerer
from .state import RunState

if TYPE_CHECKING:
    from .replay import Replay



class Driver:
    """The pump of one run (see the module docstring).

    ``replay``: the replay of a saved conversation, while it replays: it sees each message, and
    each event of the types it ``watched``, before it is applied (``Replay.saw``), and answers
    each request it can inside the pump (``Replay.ready``: no trip out of the pump per saved
    request); once it says it went live, the pump shows it nothing more."""

    __slots__ = ("_gen", "replay", "state", "steered")

    def __init__(self, state: RunState, flow: Flow, replay: Replay | None = None) -> None:
        self.state = state
        self.replay = replay
        # The answerer driving the run takes a ``TakeSteered`` from ``Session.queued`` as the
        # live answerer does (``convo._run.answerer.steered_from_session``; asked by ``drive``
        # and ``adrive`` of the answerer each is given: a served turn drives through its own
        # layer, which takes steered messages from the store's queue): while nothing is
        # queued, the pump answers it (``()``), as it answers a guard check no guard looks at.
        self.steered = False
        self._gen = self._pump(flow)
        if replay is None:  # (a replay has the run follow the state's changes once it is live)
            session = state.session
            # (a new session's state is empty, with nothing to undo: nothing to rewind)
            state.follow(rewound(session.state, session.internal, (), 0)
                         if session.state or STATE_UNDO in session.internal else {})

    def step(self, answer: Any = None) -> Request[Any] | None:
        """Answer the last request (``None`` to start) and run to the next one."""
        try:
            return self._gen.send(answer)
        except StopIteration:
            return None

    def fail(self, exc: BaseException) -> Request[Any] | None:
        """The last request could not be answered: the run ends with ``exc``."""
        try:
            return self._gen.throw(exc)
        except StopIteration:
            return None

    def close(self) -> None:
        """Stop the run where it is (the generators' ``finally`` blocks run)."""
        self._gen.close()

    def _pump(self, flow: Flow) -> Generator[Request[Any], Any, None]:
        # Runs for every step of every run (thousands when a long conversation is rebuilt):
        # the common steps first, and the replay shown only what it follows (not requests).
        state = self.state
        session = state.session
        # Whether the pump checks a model's reply with the run's output guards (decided once
        # per run, by its plan: a run without guards pays one test per request for it).
        at_calls = state.plan.reply_guards is not None
        ended: BaseException | None = None
        try:
            answer: Any = None
            while True:
                step = flow.send(answer)
                answer = None
                if isinstance(step, Message):
                    replay = self.replay
                    if replay is not None:
                        if not replay.saw(step):
                            self.replay = None  # it went live
                        elif replay.kept is not None:  # the saved one, with its records
                            step, replay.kept = replay.kept, None
                    state.add(step)
                elif isinstance(step, Request):
                    cls = step.__class__
                    if cls is CheckGuards:
                        check = cast(CheckGuards, step)
                        if not check.guards and check.on not in state.plan.on:
                            continue  # no guard to run: unchanged (answered inside the pump)
                        if self.replay is None:
                            answer = inline(state, check)  # plain functions: checked here
                            if answer is not NOTHING:
                                continue
                    replay = self.replay
                    if replay is not None:
                        saved = replay.answers.get(cls)  # (``Replay.ready``, without its call)
                        answer = saved(step) if saved is not None else replay.ready(step)
                        if answer is not NOTHING:
                            continue
                        if not replay.replaying:
                            self.replay = None  # it went live at this request
                            if cls is CheckGuards:
                                answer = inline(state, cast(CheckGuards, step))
                                if answer is not NOTHING:
                                    continue
                    elif cls is TakeSteered and self.steered and not session.queued:
                        answer = ()  # nothing steered: answered inside the pump
                        continue
                    was = state.was  # what changed since the last message: kept
                    if was is not None and (STATE_UNDO in session.internal
                                            or not session.state == was):  # (see ``mark``)
                        state.mark()
                    answer = yield step
                    if at_calls and cls is CallModel:
                        # the run's output guards (``step`` is a CallModel: no cast's call)
                        answer = at_call(state, step, answer)  # type: ignore[arg-type]
                elif isinstance(step, Event):
                    replay = self.replay
                    if replay is not None and isinstance(step, replay.watched) \
                            and not replay.saw(step):
                        self.replay = None
                    if state.on_event is not None:  # before a listener hears of the event
                        was = state.was  # (none to hear: kept at the next request or message)
                        if was is not None and (STATE_UNDO in session.internal
                                                or not session.state == was):
                            state.mark()
                    state.event(step)
                elif isinstance(step, ChildMessage):
                    if self.replay is not None and not self.replay.saw(step):
                        self.replay = None
                    state.add(step.message, step.session, step.scope)
                else:
                    raise TypeError(f"a template yielded {step!r}; expected a Message, an "
                                    "Event or a request from convo._requests")
        except StopIteration:
            pass
        except BaseException as exc:
            ended = exc
        finally:
            flow.close()
        if self.replay is not None:  # the run ended while replaying: what it counted counts
            self.replay.settle()
        state.finish(ended)
        if state.reraise(ended):
            raise ended  # type: ignore[misc]


def drive(driver: Driver, answerer: Answerer, request: Request[Any] | None = None,
          *, start: Any = None) -> Pause | None:
    """Run until the run ends (``None``) or the answerer pauses (the ``Pause``), blocking.

    ``request``: a request to answer first (one that paused before); else ``start`` is sent
    (``None`` starts the run; the answer to the request that paused goes on from there)."""
    driver.steered = steered_from_session(answerer)
    if request is None:
        request = driver.step(start)
    send = driver._gen.send  # ``driver.step``, without a call per step
    while request is not None:
        try:
            answer = answerer.answer(request)
        except Pause as pause:
            return pause
        except BaseException as exc:  # handed to the driver, which decides the outcome
            request = driver.fail(exc)
            continue
        try:
            request = send(answer)
        except StopIteration:
            return None
    return None


async def adrive(driver: Driver, answerer: Answerer, request: Request[Any] | None = None,
                 *, start: Any = None) -> Pause | None:
    """``drive`` on the running loop. ``start``: the answer to send first (when ``request``
    is ``None``). (A served conversation commits what each step added in its answerer,
    before the model call or the tools that follow it: ``convo.serve._engine``.)"""
    driver.steered = steered_from_session(answerer)
    if request is None:
        request = driver.step(start)
    while request is not None:
        try:
            answer = await answerer.aanswer(request)
        except Pause as pause:
            return pause
        except BaseException as exc:  # handed to the driver, which decides the outcome
            request = driver.fail(exc)
        else:
            request = driver.step(answer)
    return None
