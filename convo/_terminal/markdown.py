"""Replies rendered as Markdown in the terminal, also while they stream (rich, imported only
when a reply is shown: ``import convo`` does not load it).

While a reply streams it is redrawn in place (every 50 ms, by rich's thread) in a live region
that shows its most recent lines; when it is complete the live region is erased and the whole
reply is printed once, so the terminal's scrollback holds it exactly once however long it is.
"""

from __future__ import annotations

import re
from typing import Any, Final, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

REDRAW_S: Final = 0.05
#: How Markdown blocks that are not paragraphs begin: headings, fences, lists, quotes, tables,
#: indented code.
_BLOCK: Final = re.compile(r"#|```|~~~|[-*+] |\d+[.)] |>|\||    |\t")


def _starts_with_block(text: str) -> bool:
    return _BLOCK.match(text.lstrip("\n")) is not None


class MarkdownView:
    """Shows replies as Markdown on a terminal ``stream``, labelled ``label``."""

    def __init__(self, stream: TextIO, *, color: bool) -> None:
        self.console = Console(file=stream, force_terminal=True, no_color=not color,
                               highlight=False)
        self.color = color
        self._live: Live | None = None
        self._text = ""
        self._label = ""

    def renderable(self, label: str, text: str) -> RenderableType:
        """The label inline when the reply opens with a paragraph, else on a line of its own."""
        if not _starts_with_block(text):
            return Markdown(f"**{label}** {text.lstrip()}")
        head = Text(label, style="bold cyan" if self.color else "bold")
        return Group(head, Markdown(text))

    def show(self, label: str, text: str) -> None:
        self.console.print(self.renderable(label, text))

    @property
    def streaming(self) -> bool:
        return self._live is not None

    def add(self, label: str, text: str) -> None:
        if self._live is None:
            self._label, self._text = label, ""
            self._live = Live(console=self.console, transient=True,
                              refresh_per_second=1 / REDRAW_S, redirect_stdout=False,
                              redirect_stderr=False, vertical_overflow="crop",
                              get_renderable=self._tail)
            self._text = text
            self._live.start(refresh=True)  # the first words at once, the rest as they come
            return
        self._text += text

    def _tail(self) -> Any:
        height = max(self.console.size.height - 2, 3)
        # Two columns short of the width: a ^C the terminal echoes must not wrap the line,
        # or the region would no longer be erased exactly.
        options = self.console.options.update_width(max(self.console.width - 2, 10))
        lines = self.console.render_lines(self.renderable(self._label, self._text), options,
                                          pad=False, new_lines=False)
        kept = lines[-height:]
        return _Lines(kept)

    def end(self) -> str:
        """Erase the live region and print the reply in full; returns its text."""
        live, text = self._live, self._text
        if live is None:
            return ""
        self._live, self._text = None, ""
        live.stop()
        if text.strip():
            self.show(self._label, text)
        return text


class _Lines:
    """Rendered lines, drawn as they are."""

    def __init__(self, lines: list[list[Any]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: Any) -> Any:
        from rich.segment import Segment

        for i, line in enumerate(self.lines):
            if i:
                yield Segment.line()
            yield from line
