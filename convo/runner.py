"""Runner: drives template generators, does all the I/O, and records why a run ended.

``run`` and ``arun`` drive the very same generator (``drive``); only the answering of requests
differs (blocking calls vs. awaits), and both dispatch through the request's ``handler`` to
the run's answers (``convo.driving.Run``). Everything else — appending messages, events,
limits, the outcome — happens once, in ``drive``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Final

import attrs

from .context import ContextWindow, check_window, estimate_message
from .driving import Run
from .errors import DefinitionError
from .events import Event
from .interfaces.base import UserInterface
from .limits import Limits
from .messages import Message
from .models.base import Model
from .requests import CallModel, Flow, Request, RunTools, ToolRun
from .session import Session
from .summary import fit
from .templates.base import Template
from .templates.tree import validate_tree

EventHandler = Callable[[Event], None]
_APPLIED: Final = (Message, Event)  # what drive() applies itself (a tuple: checked per step)


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


@attrs.define(slots=False, eq=False)
class Runner:
    """Runs a template tree against a model and a user interface.

    ``run()`` and ``await arun()`` return the session, whose ``outcome`` says why the run
    ended. An exception that escapes is re-raised after the outcome (status ``error``) is
    recorded, unless ``raise_errors=False``. ``limits`` bounds what the whole conversation
    may use (a ``Limits`` or a dict of its fields; with ``tell_model=True`` each model call is
    also sent what is left). ``context`` (a ``ContextWindow``) bounds what every model call
    is sent; a template's own ``context=`` takes precedence. A reply cut off at the model's
    token limit is kept (a ``ReplyTruncated`` event says so) unless
    ``truncated_is_error=True``.
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

    def __attrs_post_init__(self) -> None:
        validate_tree(self.template)

    def start(self, session: Session | None = None) -> Run:
        """The state of a new run on ``session`` (for driving it step by step)."""
        return Run(self, Session() if session is None else session)

    def run(self, session: Session | None = None) -> Session:
        """Run the conversation to its end, blocking."""
        run = self.start(session)
        driver = self.drive(run)
        send: Callable[[Any], Request] = driver.send
        value: Any = None
        while True:
            try:
                request = send(value)
            except StopIteration:
                return run.session
            try:
                value, send = getattr(run, request.handler)(request), driver.send
            except BaseException as exc:  # handed to the driver, which decides the outcome
                value, send = exc, driver.throw

    async def arun(self, session: Session | None = None) -> Session:
        """Run the conversation to its end on the running event loop.

        Async tools in one batch run concurrently (results keep call order). Cancelling the
        task ends the run with status ``stopped``, the session intact.
        """
        run = self.start(session)
        driver = self.drive(run)
        send: Callable[[Any], Request] = driver.send
        value: Any = None
        while True:
            try:
                request = send(value)
            except StopIteration:
                return run.session
            try:
                value, send = await getattr(run, "a" + request.handler)(request), driver.send
            except BaseException as exc:  # handed to the driver, which decides the outcome
                value, send = exc, driver.throw

    def drive(self, run: Run, template: Template | None = None
              ) -> Generator[Request, Any, None]:
        """Drive the template's generator; yield only the requests that need I/O.

        The caller answers each request (``getattr(run, request.handler)``) or throws the
        failure back in; everything else — appending messages, events, limits, the outcome —
        happens here, once for every way of answering. ``template`` (default: the runner's)
        is what a resumed conversation runs instead (``convo.resume``).
        """
        flow: Flow = (template or self.template).render(run.session)
        ended: BaseException | None = None
        try:
            answer: Any = None
            while True:
                step = flow.send(answer)
                if isinstance(step, _APPLIED):
                    run.apply(step)
                    answer = None
                elif isinstance(step, CallModel) and \
                        (window := step.context or self.context) is not None:
                    # A ContextWindow chooses what is sent (and may make a summary call first),
                    # keeping room for the budget note added when the call is made.
                    note = run.budget_note(step)
                    answer = yield from _within(run, fit(
                        window, run.session, step, step.model or self.model, run.emit,
                        reserve=0 if note is None else estimate_message(note)))
                elif isinstance(step, Request):
                    answer = yield from _answer(run, step)
                else:
                    raise TypeError(f"a template yielded {step!r}; expected a Message, an "
                                    "Event or a request from convo.requests")
        except StopIteration:
            pass
        except BaseException as exc:
            ended = exc
        finally:
            flow.close()
        run.finish(ended)
        if run.reraise(ended):
            raise ended  # type: ignore[misc]


def _answer(run: Run, request: Request) -> Generator[Request, Any, Any]:
    """Check the limits, then have the request answered; tool calls a limit stops get
    ``ToolRun(skipped=...)`` in their place."""
    admitted, skipped = run.admit(request)
    if not skipped:
        return (yield request)
    assert isinstance(request, RunTools)
    runs: list[ToolRun] = (yield admitted) if admitted is not None else []
    ran = iter(runs)
    left = iter(skipped)
    kept = {id(inv) for inv in admitted.invocations} if isinstance(admitted, RunTools) else set()
    return [next(ran) if id(inv) in kept else next(left) for inv in request.invocations]


def _within(run: Run, flow: Generator[CallModel, Any, Message]) -> Generator[Request, Any, Any]:
    """Answer the model calls of a ContextWindow's ``flow`` (its summary calls too) like any
    request, limits checked; returns the reply to the template's call."""
    try:
        answer: Any = None
        while True:
            try:
                request = flow.send(answer)
            except StopIteration as stop:
                return stop.value
            answer = yield from _answer(run, request)
    finally:
        flow.close()
