"""CommandLineRunner: a Runner that shows the conversation in the terminal."""

from __future__ import annotations

from typing import Any

import attrs

from .._run.state import RunState
from .._runner import Runner
from .._session import RunStatus, Session
from ..events import Event
from ..templates._tree import termination_tools
from .cancel import Cancelling
from .input import CLIInterface
from .printer import ConsolePrinter, _one_line
from .steering import Steering


@attrs.define(slots=False, eq=False)
class CommandLineRunner(Runner):
    """A Runner that shows the conversation in the terminal as it happens.

    Its default user interface is ``CLIInterface()`` (with slash commands); text is streamed
    when the model streams. The ``printer`` (a ``ConsolePrinter`` by default) sees every event
    after the caller's own ``on_event`` handler, so a transcript is written before the screen
    shows it. Ctrl-C during a model call or a tool cancels that reply only and the conversation
    goes on (see ``convo._terminal.cancel``). In ``run()``, ``interrupts`` is the SIGINT handler
    to reset once a reply is cancelled, if the caller installed one; ``arun()`` installs its own
    for the run's duration (``convo._terminal.async_cancel``) when it runs on the main thread.

    Made to be a script's main loop, it shows a failure once (the last line says what went
    wrong) and, with ``exit_on_error`` (the default), exits with status 1 instead of raising
    and printing a traceback; ``raise_errors=True`` raises instead, as ``Runner`` does.
    """

    printer: Any = attrs.field(factory=ConsolePrinter, kw_only=True)
    interrupts: Any = attrs.field(default=None, kw_only=True)
    raise_errors: bool = attrs.field(default=False, kw_only=True)
    exit_on_error: bool = attrs.field(default=True, kw_only=True)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.user_interface is None:
            self.user_interface = CLIInterface()
        if isinstance(self.user_interface, CLIInterface) and hasattr(self.printer,
                                                                     "quiet_until_prompt"):
            self.printer.quiet_until_prompt = True  # its line editor draws what is typed
        commands = getattr(self.user_interface, "commands", None)
        if commands is not None and commands.model is None:
            commands.model = self.model
        hide = getattr(self.printer, "hidden_tools", None)
        if isinstance(hide, set):
            hide.update(termination_tools(self.template))
        user_handler, printer = self.on_event, self.printer

        def show(event: Event) -> None:
            if user_handler is not None:
                user_handler(event)
            printer(event)

        self.on_event = show

    def answerer(self, state: RunState) -> Any:
        live = Cancelling(super().answerer(state), self.interrupts)
        ui = self.user_interface
        if not isinstance(ui, CLIInterface):
            return live
        return Steering(live, state.session, ui, lambda line: self._typed(state, ui, line))

    def _typed(self, state: RunState, ui: CLIInterface, line: str) -> None:
        """A line typed during a reply (``convo._terminal.steering``): a message goes to the run
        as a steer, shown dimmed until taken; a command waits for the next prompt, and so does
        a message when nothing runs live to take it (a branch being rebuilt)."""
        if line.lstrip().startswith("/"):
            ui.typed_ahead.append(line)
            aside = getattr(self.printer, "aside", None)
            if callable(aside):
                aside(f"  {_one_line(line)} (typed at the next prompt)")
            return
        waiting = getattr(self.printer, "waiting", None)
        try:
            if callable(waiting):
                waiting(line, lambda: self.steer(state.session, line))
            else:
                self.steer(state.session, line)
        except RuntimeError:
            ui.typed_ahead.append(line)

    def run(self, session: Session | None = None) -> Session:
        self.printer.start()
        return self._exit_on_error(super().run(session))

    async def arun(self, session: Session | None = None) -> Session:
        import asyncio

        from .async_cancel import handling_interrupts

        self.printer.start()
        session = Session() if session is None else session
        with handling_interrupts() as interrupts:
            try:
                session = await super().arun(session)
            except asyncio.CancelledError:
                if interrupts is None or not interrupts.stopped:
                    raise
                interrupts.task.uncancel()  # Ctrl-C ended the run: stopped, as in run()
        return self._exit_on_error(session)

    def _exit_on_error(self, session: Session) -> Session:
        outcome = session.outcome
        if self.exit_on_error and outcome is not None and outcome.status == RunStatus.ERROR:
            raise SystemExit(1)
        return session
