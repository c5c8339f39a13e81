"""Runner: runs a template tree against a model and a user interface, and says why it ended.

``run``, ``arun``, ``resume`` and ``aresume`` all go through the one driver
(``convo._run.driver``): the template's generator is pumped by a ``Driver`` and its requests
are answered by the ``LiveAnswerer`` (``convo._run.answerer``), with a ``Replay`` in front of it
when a saved conversation is resumed. ``Runner.start`` assembles that stack of answerers, the
one place that does (``convo._run.stack``). Counting, limits and the outcome happen once, in the
run's ``RunState``, for every way of answering.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from ._context import ContextWindow, check_window
from ._errors import DefinitionError
from ._interfaces.base import UserInterface
from ._limits import Limits
from ._messages import Message
from ._parts import Content
from ._resume import Resume
from ._run import branch as branching
from ._run.answerer import LiveAnswerer
from ._run.driver import Driver, adrive, drive
from ._run.replay import Replay
from ._run.stack import Layer, stack
from ._run.state import RunState
from ._session import Session
from .events import Event
from .guards._base import AnyGuard, check_names
from .models._base import Model
from .templates._base import Template
from .templates._tree import toolsets, validate_tree

EventHandler = Callable[[Event], None]
Saved = Session | str | os.PathLike[str]


def _check_model(runner: Runner, attribute: attrs.Attribute[Any], model: Any) -> None:
    if model is not None and not callable(getattr(model, "complete", None)):
        raise DefinitionError(
            f"model must implement the Model protocol (complete/acomplete), "
            f"got {type(model).__name__}"
        )


def _check_max_messages(runner: Runner, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 1:
        raise DefinitionError(f"max_messages must be at least 1, got {value}")


def _to_limits(value: Any) -> Limits | None:
    return Limits.from_mapping(value, "Runner")


@attrs.define(slots=True, eq=False)
class Run:
    """One run being driven: its driver, the answerer that answers it, and its state."""

    driver: Driver
    answerer: Any  # the stack's outermost Answerer (the LiveAnswerer, or one in front of it)

    @property
    def state(self) -> RunState:
        return self.driver.state

    @property
    def session(self) -> Session:
        return self.driver.state.session


_checked_guards: list[tuple[AnyGuard, ...]] = [()]  # the list checked last (guards are frozen)


def _runner_guards(guards: Iterable[AnyGuard]) -> tuple[AnyGuard, ...]:
    """``guards=`` checked (``check_names``); nothing to check when there are none, nor when
    they are the guards checked last (a runner built per conversation with one list)."""
    if guards == () or guards == []:
        return ()
    given = tuple(guards)
    last = _checked_guards[0]
    if given == last:  # the same guards, one by one (a guard equals only itself)
        return last
    _checked_guards[0] = checked = check_names(given, "Runner")
    return checked


@attrs.define(slots=False, eq=False)
class Runner:
    """Runs a template tree against a model and a user interface.

    ``run()`` and ``await arun()`` return the session, whose ``outcome`` says why the run
    ended; ``resume(saved)`` and ``await aresume(saved)`` continue a saved conversation (a
    ``Session`` or a transcript's path) without calling a model or tool again for what was
    saved. An exception that escapes is re-raised after the outcome (status ``error``) is
    recorded, unless ``raise_errors=False``. ``limits`` bounds what the whole conversation
    may use (a ``Limits`` or a dict of its fields; with ``tell_model=True`` each model call is
    also sent what is left). ``context`` (a ``ContextWindow``) bounds what every model call
    is sent; a template's own ``context=`` takes precedence. A reply cut off at the model's
    token limit is kept (a ``ReplyTruncated`` event says so) unless
    ``truncated_is_error=True``. ``guards`` (``convo.guards``: ``Guard``, ``ModelGuard``)
    check every user message, reply, tool call and tool result of every turn (API.md §27).
    """

    model: Model | None = attrs.field(validator=_check_model)
    template: Template
    user_interface: UserInterface | None = None
    on_event: EventHandler | None = attrs.field(default=None, kw_only=True)
    max_messages: int = attrs.field(default=1000, kw_only=True, validator=_check_max_messages)
    raise_errors: bool = attrs.field(default=True, kw_only=True)
    truncated_is_error: bool = attrs.field(default=False, kw_only=True)
    limits: Limits | None = attrs.field(default=None, kw_only=True, converter=_to_limits)
    context: ContextWindow | None = attrs.field(default=None, kw_only=True,
                                                validator=check_window)
    guards: tuple[AnyGuard, ...] = attrs.field(default=(), kw_only=True,
                                               converter=_runner_guards)
    #: The sessions of the runs in progress (``steer`` finds them), by the ``id`` of their
    #: ``Run``: one entry per run, put in and taken out whole (no lock: each is one dict
    #: operation, and a run's entry is its own, however many runs share a session).
    _running: dict[int, Session] = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        validate_tree(self.template)

    def answerer(self, state: RunState) -> Any:
        """What answers a run's requests live (a front end may put its own answerer in front:
        the terminal's Ctrl-C does)."""
        return LiveAnswerer(state)

    def start(self, session: Session | None = None, *, saved: Saved | None = None,
              layers: Sequence[Layer] = (), clock: Callable[[], float] | None = None,
              replaying: type[Replay] = Replay) -> Run:
        """A run ready to be driven: on ``session`` (default: a new one), or continuing
        ``saved`` (a ``Session`` or a transcript's path).

        Its answerers are assembled here, and only here, outermost first: the ``Replay`` of
        ``saved`` (also given to the ``Driver``), ``layers`` (a front end's: a served
        conversation's cancel), then ``answerer(state)``. ``clock``: the run's clock
        (default ``time.perf_counter``), for a sandbox that must not read the process's.
        ``replaying``: the kind of replay of ``saved`` (a served client's history is
        replayed by ``HistoryReplay``)."""
        template = self.template
        if isinstance(template, Resume):  # convo._resume.resume()'s wrapper, from before
            # (a ``saved`` given here wins: a branch of a resumed conversation replays its own)
            saved, template = template.saved if saved is None else saved, template.template
        saved_session = None if saved is None else _saved_session(saved)
        if session is None:
            session = Session() if saved_session is None else Session(
                state=dict(saved_session.state), approvals=dict(saved_session.approvals),
                internal=dict(saved_session.internal), parent=saved_session.parent,
                queued=list(saved_session.queued))
        state = RunState(self, session, clock=clock)
        answerer = stack(self.answerer(state), layers)
        replay = None if saved_session is None else replaying(answerer, saved_session, state)
        driver = Driver(state, template.render(session), replay)
        return Run(driver, answerer if replay is None else replay)

    def run(self, session: Session | None = None) -> Session:
        """Run the conversation to its end, blocking."""
        run = self.start(session)
        key = self._began(run)
        try:
            drive(run.driver, run.answerer)
        finally:
            self._ended(key)
        return run.session

    def steer(self, session: Session, text: Content) -> Message:
        """Hand ``text`` to the run in progress on ``session`` (the session given to
        ``run``/``arun``, which works on it in place; thread-safe): the run takes it at its
        next safe point — before its next model call, after the tool results it waits on —
        as an ordinary user message, so the model sees it in this turn; a turn that ends
        before such a point takes it as the reply to its next ``AskUser``. Until taken it is
        in ``session.queued``. No run in progress on ``session``: ``RuntimeError``."""
        message = Message("user", text)
        # (a copy, taken in one step: runs begin and end on other threads meanwhile)
        if not any(running is session for running in list(self._running.values())):
            raise RuntimeError("Runner.steer: no run of this runner is in progress on this "
                               "session; pass the Session given to run(session) or "
                               "arun(session) while it runs")
        session.queued.append(message)
        return message

    async def asteer(self, session: Session, text: Content) -> Message:
        """``steer`` from a coroutine (on the run's loop or another)."""
        return self.steer(session, text)

    # A run in progress (``steer`` finds its session): ``_began`` before it is driven,
    # ``_ended`` in a ``finally`` after (two calls, not a context manager's generator: this
    # runs for every run).
    def _began(self, run: Run) -> int:
        key = id(run)  # (the run lives until ``_ended``: no other run has its id meanwhile)
        self._running[key] = run.session
        return key

    def _ended(self, key: int) -> None:
        del self._running[key]

    async def arun(self, session: Session | None = None) -> Session:
        """Run the conversation to its end on the running event loop.

        Async tools in one batch run concurrently (results keep call order); a sync tool runs
        in a worker thread (``inline=True`` runs it on the loop). Cancelling the task ends
        the run with status ``stopped``, the session intact.
        """
        run = self.start(session)
        key = self._began(run)
        try:
            await adrive(run.driver, run.answerer)
        finally:
            self._ended(key)
        return run.session

    def resume(self, saved: Saved) -> Session:
        """Continue ``saved`` (a ``Session``, or the path of a transcript), blocking: what was
        saved is replayed, then the run goes on live. Returns the new session."""
        run = self.start(saved=saved)
        key = self._began(run)
        try:
            drive(run.driver, run.answerer)
        finally:
            self._ended(key)
        return run.session

    async def aresume(self, saved: Saved) -> Session:
        """``resume`` on the running event loop."""
        run = self.start(saved=saved)
        key = self._began(run)
        try:
            await adrive(run.driver, run.answerer)
        finally:
            self._ended(key)
        return run.session

    def branch(self, saved: Saved, *, before: int) -> Session:
        """A new session holding the messages of ``saved`` (a ``Session`` or a transcript's
        path) before index ``before``, rebuilt by replay to the template's state there, with
        no model, tool or person asked (``convo._run.branch``). ``before`` is the index of a
        user message (send another in its place) or of a model's reply (``resume`` makes
        that model call again, with exactly the messages before it); anything else is a
        ``ValueError`` naming the index and what is there. ``saved`` is not changed; the
        branch's ``parent`` is ``{"id": the path as given, or None, "before": before}``."""
        return self._branch_given(saved, before=before)

    async def abranch(self, saved: Saved, *, before: int) -> Session:
        """``branch`` on the running event loop."""
        source, state, run = self._branching(saved, before, 0)
        pause = await adrive(run.driver, run.answerer)
        return self._branched(source, saved, before, state, run, pause)

    def _branch_given(self, saved: Saved, *, before: int, given: int = 0) -> Session:
        """``branch``, for a conversation whose first ``given`` messages were in the session
        before its template ran (``convo chat``'s system prompt): they are not replayed.
        (The terminal's; not public: a template normally yields every message.)"""
        source, state, run = self._branching(saved, before, given)
        return self._branched(source, saved, before, state, run,
                              drive(run.driver, run.answerer))

    def _branching(self, saved: Saved, before: int, given: int
                   ) -> tuple[Session, tuple[dict[str, Any], Any] | None, Run]:
        source = _saved_session(saved)
        cut = branching.cut(source, before)
        state = branching.kept(cut, source)
        given = min(given, before)
        session = Session(cut.messages[:given], dict(cut.state), approvals=dict(cut.approvals),
                          internal=dict(cut.internal))
        cut.messages[:given] = []
        run = self.start(session, saved=cut, layers=(branching.Holding,))
        run.answerer.quiet()  # nothing is heard of what a branch rebuilds
        run.state.listen(None)
        return source, state, run

    def _branched(self, source: Session, saved: Saved, before: int,
                  state: tuple[dict[str, Any], Any] | None, run: Run, pause: Any) -> Session:
        try:
            branching.reached(run.session, source, before, pause)
            parent = {"id": None if isinstance(saved, Session) else os.fspath(saved),
                      "before": before}
            return branching.made(run.session, state, parent)
        finally:
            run.driver.close()

    def close(self) -> None:
        """Close the toolsets of the template tree that have ``close()`` (an ``MCPServer``:
        its connection, a stdio server's process). Safe to call twice; a later run opens
        them again. Every one is closed before the first failure, if any, is raised."""
        failures: list[Exception] = []
        for toolset in toolsets(self.template):
            close = getattr(toolset, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:
                    failures.append(exc)
        if failures:
            raise failures[0]

    async def aclose(self) -> None:
        """``close()`` on the running event loop (``await aclose()`` where a toolset has
        it, else its ``close()``)."""
        failures: list[Exception] = []
        for toolset in toolsets(self.template):
            aclose, close = getattr(toolset, "aclose", None), getattr(toolset, "close", None)
            try:
                if callable(aclose):
                    await aclose()
                elif callable(close):
                    close()
            except Exception as exc:
                failures.append(exc)
        if failures:
            raise failures[0]


def _saved_session(saved: Saved) -> Session:
    if isinstance(saved, Session):
        return saved
    if isinstance(saved, str | os.PathLike):
        from ._record.transcript import load_transcript

        return load_transcript(saved)
    raise TypeError(f"resume: saved must be a Session or a transcript's path, "
                    f"got {type(saved).__name__}")
