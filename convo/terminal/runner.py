"""CommandLineRunner: a Runner that shows the conversation in the terminal."""

from __future__ import annotations

from typing import Any

import attrs

from ..events import Event
from ..runner import Runner
from ..session import Session
from .input import CLIInterface
from .printer import ConsolePrinter


@attrs.define(slots=False, eq=False)
class CommandLineRunner(Runner):
    """A Runner that shows the conversation in the terminal as it happens.

    Its default user interface is ``CLIInterface()``; text is streamed when the model streams.
    The ``printer`` (a ``ConsolePrinter`` by default) sees every event after the caller's own
    ``on_event`` handler, so a transcript is written before the screen shows it.
    """

    printer: Any = attrs.field(factory=ConsolePrinter, kw_only=True)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.user_interface is None:
            self.user_interface = CLIInterface()
        user_handler, printer = self.on_event, self.printer

        def show(event: Event) -> None:
            if user_handler is not None:
                user_handler(event)
            printer(event)

        self.on_event = show

    def run(self, session: Session | None = None) -> Session:
        self.printer.start()
        return super().run(session)

    async def arun(self, session: Session | None = None) -> Session:
        self.printer.start()
        return await super().arun(session)
