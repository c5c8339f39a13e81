"""Runner: drives template generators, does all the I/O, and records why a run ended.

``run`` and ``arun`` drive the very same generators; only the answering of requests differs
(blocking calls vs. awaits). Everything else (appending messages, events, limits, the
outcome) is shared in ``_Run``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

from .context import ContextWindow
from .errors import (
    DefinitionError,
    InterfaceError,
    ModelError,
    ReachedEndTemplateException,
)
from .events import Event, MessageAdded, ModelCallEnded, ModelCallStarted, RunEnded, TextDelta
from .events import TurnEnded as _TurnEnded
from .interfaces.base import UserInterface
from .messages import Message
from .models.base import Model
from .requests import AskUser, CallModel, Flow, Invocation, Request, RunTools, ToolRun
from .session import NO_USAGE, Outcome, RunStatus, Session, TurnResult, Usage
from .summary import fit
from .templates.base import Template, validate_tree

# asyncio costs ~25 ms to import and only async runs (and async tools) need it: the functions
# below import it when they run, so that `import convo` stays quick.

EventHandler = Callable[[Event], None]


class _MaxMessages(Exception):
    pass


class _Run:
    """The state of one run: counters, the clock, and the shared handling of steps."""

    __slots__ = ("added", "model_calls", "on_event", "runner", "session", "started", "turn",
                 "usage")

    def __init__(self, runner: Runner, session: Session) -> None:
        self.runner = runner
        self.session = session
        self.on_event = runner.on_event
        self.added = 0
        self.model_calls = 0
        self.usage: Usage = NO_USAGE
        self.turn: TurnResult | None = None
        self.started = time.perf_counter()

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def apply(self, step: Message | Event) -> None:
        """Append a message or pass an event on (TurnEnded also lands on session.turns)."""
        if isinstance(step, Message):
            if self.added >= self.runner.max_messages:
                raise _MaxMessages
            self.session.messages.append(step)
            self.added += 1
            if self.on_event is not None:
                self.on_event(MessageAdded(step, len(self.session.messages) - 1))
            return
        if isinstance(step, _TurnEnded):
            self.session.turns.append(step.result)
            self.turn = step.result
        self.emit(step)

    def model_for(self, request: CallModel) -> Model:
        model = request.model or self.runner.model
        if model is None:
            raise DefinitionError(
                "no model to call: give the Runner a model, or the template its own model="
            )
        self.model_calls += 1
        if self.on_event is not None:  # no event objects when nobody listens
            self.on_event(ModelCallStarted(self.model_calls, len(self.sent(request)),
                                           len(request.tools)))
        return model

    def sent(self, request: CallModel) -> Sequence[Message]:
        """What the model is sent: the session's messages, or those a ContextWindow chose."""
        return self.session.messages if request.messages is None else request.messages

    def on_delta(self, request: CallModel) -> Callable[[str], None] | None:
        if self.on_event is None or request.purpose != "reply":
            return None
        emit = self.on_event
        return lambda text: emit(TextDelta(text))

    def model_replied(self, reply: Any, started: float) -> Message:
        if not isinstance(reply, Message) or reply.role != "assistant":
            raise ModelError(f"the model must return an assistant Message, got {reply!r}")
        usage = reply.metadata.get("usage") if reply.metadata else None
        call_usage = Usage.from_dict(usage) if usage else NO_USAGE
        if usage:
            self.usage = self.usage + call_usage
        if self.on_event is not None:
            self.on_event(ModelCallEnded(self.model_calls, reply, call_usage,
                                         time.perf_counter() - started))
        return reply

    def user_interface(self) -> UserInterface:
        ui = self.runner.user_interface
        if ui is None:
            raise InterfaceError(
                "the template asks the user for input (a UserTemplate without content), "
                "but the Runner has no user_interface"
            )
        return ui

    def finish(self, exc: BaseException | None) -> Outcome:
        """Decide the outcome from how the generator ended, and record it."""
        farewell = error = None
        if exc is None:
            status = self.turn.status if self.turn is not None else RunStatus.COMPLETED
        elif isinstance(exc, ReachedEndTemplateException):
            status, farewell = RunStatus.ENDED, exc.farewell_message
        elif isinstance(exc, EOFError | KeyboardInterrupt) or _cancelled(exc):
            status = RunStatus.STOPPED
        elif isinstance(exc, _MaxMessages):
            status = RunStatus.MAX_MESSAGES
        else:
            status, error = RunStatus.ERROR, f"{type(exc).__name__}: {exc}"
        outcome = Outcome(
            status=status, farewell=farewell, error=error, turn=self.turn,
            messages=len(self.session.messages), model_calls=self.model_calls,
            usage=self.usage, elapsed_s=time.perf_counter() - self.started,
        )
        self.session.outcome = outcome
        if self.on_event is not None:
            self.on_event(RunEnded(outcome))
        return outcome

    def reraise(self, exc: BaseException | None) -> bool:
        """Whether the exception that ended the run should propagate to the caller."""
        if exc is None or isinstance(exc, ReachedEndTemplateException | EOFError | _MaxMessages):
            return False
        if isinstance(exc, KeyboardInterrupt):
            return False
        if not isinstance(exc, Exception):  # cancellation, SystemExit: always propagate
            return True
        return self.runner.raise_errors


def _cancelled(exc: BaseException) -> bool:
    # Only a loaded asyncio can have raised its CancelledError.
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def _run_sync(invocation: Invocation) -> ToolRun:
    tool = invocation.tool
    try:
        if tool.is_async:
            import asyncio

            return ToolRun(asyncio.run(tool.ainvoke(invocation.args)))
        return ToolRun(tool.invoke(invocation.args))
    except Exception as exc:
        return ToolRun(error=exc)


async def _run_async(invocation: Invocation) -> ToolRun:
    tool = invocation.tool
    try:
        if not tool.is_async:
            return ToolRun(tool.invoke(invocation.args))
        timeout = tool.timeout
        if timeout is None:
            return ToolRun(await tool.ainvoke(invocation.args))
        import asyncio

        try:
            return ToolRun(await asyncio.wait_for(tool.ainvoke(invocation.args), timeout))
        except TimeoutError:
            return ToolRun(error=TimeoutError(
                f"tool {invocation.call.name!r} timed out after {timeout:g} s"))
    except Exception as exc:
        return ToolRun(error=exc)


class Runner:
    """Runs a template tree against a model and a user interface.

    ``run()`` and ``await arun()`` return the session, whose ``outcome`` says why the run
    ended. An exception that escapes is re-raised after the outcome (status ``error``) is
    recorded, unless ``raise_errors=False``. ``context`` (a ``ContextWindow``) bounds what
    every model call is sent; a template's own ``context=`` takes precedence.
    """

    def __init__(
        self,
        model: Model | None,
        template: Template,
        user_interface: UserInterface | None = None,
        *,
        on_event: EventHandler | None = None,
        max_messages: int = 1000,
        raise_errors: bool = True,
        context: ContextWindow | None = None,
    ) -> None:
        validate_tree(template)
        if model is not None and not callable(getattr(model, "complete", None)):
            raise DefinitionError(
                f"model must implement the Model protocol (complete/acomplete), "
                f"got {type(model).__name__}"
            )
        if max_messages < 1:
            raise DefinitionError(f"max_messages must be at least 1, got {max_messages}")
        if context is not None and not isinstance(context, ContextWindow):
            raise DefinitionError(f"context must be a ContextWindow or None, "
                                  f"got {type(context).__name__}")
        self.model = model
        self.template = template
        self.user_interface = user_interface
        self.on_event = on_event
        self.max_messages = max_messages
        self.raise_errors = raise_errors
        self.context = context

    def run(self, session: Session | None = None) -> Session:
        """Run the conversation to its end, blocking."""
        run = _Run(self, Session() if session is None else session)
        driver = self._drive(run)
        send: Callable[[Any], Request] = driver.send
        value: Any = None
        while True:
            try:
                request = send(value)
            except StopIteration:
                return run.session
            try:
                value, send = self._answer(run, request), driver.send
            except BaseException as exc:  # handed to the driver, which decides the outcome
                value, send = exc, driver.throw

    async def arun(self, session: Session | None = None) -> Session:
        """Run the conversation to its end on the running event loop.

        Async tools in one batch run concurrently (results keep call order). Cancelling the
        task ends the run with status ``stopped``, the session intact.
        """
        run = _Run(self, Session() if session is None else session)
        driver = self._drive(run)
        send: Callable[[Any], Request] = driver.send
        value: Any = None
        while True:
            try:
                request = send(value)
            except StopIteration:
                return run.session
            try:
                value, send = await self._aanswer(run, request), driver.send
            except BaseException as exc:  # handed to the driver, which decides the outcome
                value, send = exc, driver.throw

    def _drive(self, run: _Run) -> Generator[Request, Any, None]:
        """Drive the template's generator; yield only the requests that need I/O.

        ``run`` and ``arun`` answer them (or throw the failure back in); everything else —
        appending messages, events, limits, the outcome — happens here, once for both.
        """
        flow: Flow = self.template.render(run.session)
        ended: BaseException | None = None
        try:
            answer: Any = None
            while True:
                step = flow.send(answer)
                if isinstance(step, Message | Event):
                    run.apply(step)
                    answer = None
                elif isinstance(step, CallModel) and \
                        (window := step.context or self.context) is not None:
                    # A ContextWindow chooses what is sent (and may make a summary call first).
                    answer = yield from fit(window, run.session, step, step.model or self.model,
                                            run.emit)
                elif isinstance(step, CallModel | RunTools | AskUser):
                    answer = yield step
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

    def _answer(self, run: _Run, request: Request) -> Any:
        if isinstance(request, CallModel):
            model = run.model_for(request)
            started = time.perf_counter()
            reply = model.complete(run.sent(request), request.tools,
                                   on_delta=run.on_delta(request))
            return run.model_replied(reply, started)
        if isinstance(request, RunTools):
            return [_run_sync(inv) for inv in request.invocations]
        return self._ask(run, request)

    async def _aanswer(self, run: _Run, request: Request) -> Any:
        if isinstance(request, CallModel):
            model = run.model_for(request)
            started = time.perf_counter()
            reply = await model.acomplete(run.sent(request), request.tools,
                                          on_delta=run.on_delta(request))
            return run.model_replied(reply, started)
        if isinstance(request, RunTools):
            return await self._arun_tools(request.invocations)
        return await self._aask(run, request)

    @staticmethod
    async def _arun_tools(invocations: Sequence[Invocation]) -> list[ToolRun]:
        if len(invocations) == 1:
            return [await _run_async(invocations[0])]
        import asyncio

        return list(await asyncio.gather(*(_run_async(inv) for inv in invocations)))

    def _ask(self, run: _Run, request: AskUser) -> str:
        return run.user_interface().ask(run.session, request.instruction, request.default)

    async def _aask(self, run: _Run, request: AskUser) -> str:
        ui = run.user_interface()
        aask = getattr(ui, "aask", None)
        if aask is not None:
            answer: str = await aask(run.session, request.instruction, request.default)
            return answer
        return ui.ask(run.session, request.instruction, request.default)

