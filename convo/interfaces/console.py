"""CommandLineRunner: a Runner that shows the conversation in the terminal."""

from __future__ import annotations

from typing import Any

from ..events import Event
from ..models.base import Model
from ..requests import AskUser
from ..runner import EventHandler, Runner, _Run
from ..session import Session
from ..templates.base import Template
from .base import UserInterface
from .cli import CLIInterface
from .printer import ConsolePrinter


class CommandLineRunner(Runner):
    """A Runner that shows the conversation in the terminal as it happens.

    Its default user interface is ``CLIInterface()``; text is streamed when the model streams.
    """

    def __init__(
        self,
        model: Model | None,
        template: Template,
        user_interface: UserInterface | None = None,
        *,
        on_event: EventHandler | None = None,
        printer: Any = None,
        **kw: Any,
    ) -> None:
        self.printer = printer if printer is not None else ConsolePrinter()
        user_handler = on_event

        def show(event: Event) -> None:
            # The caller's handler first: a transcript is written before the screen shows it.
            if user_handler is not None:
                user_handler(event)
            self.printer(event)

        super().__init__(
            model, template, CLIInterface() if user_interface is None else user_interface,
            on_event=show, **kw,
        )

    def run(self, session: Session | None = None) -> Session:
        self.printer.start()
        return super().run(session)

    async def arun(self, session: Session | None = None) -> Session:
        self.printer.start()
        return await super().arun(session)

    def _ask(self, run: _Run, request: AskUser) -> str:
        answer = super()._ask(run, request)
        self.printer.skip_next_user = getattr(self.user_interface, "echoes_input", False)
        return answer

    async def _aask(self, run: _Run, request: AskUser) -> str:
        answer = await super()._aask(run, request)
        self.printer.skip_next_user = getattr(self.user_interface, "echoes_input", False)
        return answer
