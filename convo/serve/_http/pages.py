"""The two pages a served bot answers with: the chat page (``page.html``, at ``/``) and the
operators' page (``operator.html``, at ``/operator``). Each is one self-contained file whose
script runs under a Content-Security-Policy naming its hash, so what the server fills in (the
bot's title, its first prompt, the hidden tools) goes into the HTML around the script, never
into it, and is escaped."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import attrs

PAGE = Path(__file__).parent.parent / "page.html"  # (beside convo/serve/__init__.py)
OPERATOR_PAGE = PAGE.with_name("operator.html")
DEFAULT_TITLE = "Chat"
DEFAULT_FIRST_PROMPT = "Ask me anything."


@attrs.frozen(kw_only=True)
class PageOptions:
    """What a bot file says about its pages: ``title`` (header and ``<title>``), the
    ``first_prompt`` shown before a conversation has an assistant message, and the tools
    whose calls the chat page does not show; and what the server knows of its template:
    whether a new conversation ``greets`` (says something before it waits for the user;
    ``Engine.greets``)."""

    title: str = DEFAULT_TITLE
    first_prompt: str = DEFAULT_FIRST_PROMPT
    hidden_tools: tuple[str, ...] = ()
    max_attachment_bytes: int = 10 * 1024 * 1024
    greets: bool = True  # a new conversation says something first: stored on opening


def _meta(name: str, value: str) -> str:
    return f'<meta name="{name}" content="{escape(value, quote=True)}">'


def _fill(html: str, options: PageOptions) -> str:
    """``html`` with the bot's title and settings in place of the file's defaults."""
    title = escape(options.title, quote=False)
    swaps = [
        (f"<title>{DEFAULT_TITLE}</title>", f"<title>{title}</title>"),
        (f'<h1 id="title">{DEFAULT_TITLE}</h1>', f'<h1 id="title">{title}</h1>'),
        (_meta("convo-hidden-tools", "[]"),
         _meta("convo-hidden-tools", json.dumps(sorted(options.hidden_tools)))),
        (_meta("convo-first-prompt", DEFAULT_FIRST_PROMPT),
         _meta("convo-first-prompt", options.first_prompt)),
        (_meta("convo-max-attachment-bytes", "10485760"),
         _meta("convo-max-attachment-bytes", str(options.max_attachment_bytes))),
        (_meta("convo-greets", "true"),
         _meta("convo-greets", "true" if options.greets else "false")),
    ]
    for default, value in swaps:
        html = html.replace(default, value, 1)
    return html


def chat_page(options: PageOptions) -> str | None:
    """The chat page for this bot, or None when the file is missing (a stripped install)."""
    return _fill(PAGE.read_text(encoding="utf-8"), options) if PAGE.exists() else None


def operator_page(options: PageOptions) -> str | None:
    """The operators' page for this bot, or None when the file is missing."""
    if not OPERATOR_PAGE.exists():
        return None
    return _fill(OPERATOR_PAGE.read_text(encoding="utf-8"), options)
