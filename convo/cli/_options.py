"""Command-line options shared by the commands that hold a conversation (``chat``, ``run``)
or serve a bot (``serve``, ``mcp``, ``worker``), and the checks the parser makes on them: a
wrong value is refused by the parser, with the flag's name, before anything runs."""

from __future__ import annotations

import argparse
from urllib.parse import urlparse

from .._botfile import MODEL_HELP, add_model_options
from ._otel import add_otel_options


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(
            f"expected an http:// or https:// URL such as http://localhost:8000/v1, got {text!r}")
    return text


def name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text.strip()


def add_served_model_options(parser: argparse.ArgumentParser, *, short: bool = False) -> None:
    """The options of a bot that serves many conversations (``serve``, ``mcp``, ``worker``):
    how long a conversation may grow, and its model (``short``: ``-m`` too)."""
    parser.add_argument("--max-messages", type=positive_int, default=1000, metavar="N",
                        help="end a conversation when it reaches N messages (default: 1000)")
    if short:
        parser.add_argument("-m", "--model", type=name, help=MODEL_HELP)
    else:
        parser.add_argument("--model", help=MODEL_HELP)
    parser.add_argument("--base-url", metavar="URL", type=url,
                        help="an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    parser.add_argument("--mock", action="store_true",
                        help="use the file's mock_model even when an API key is set")
    parser.add_argument("--no-stream", action="store_true", help="do not stream replies")
    add_model_options(parser)


def conversation_options() -> argparse.ArgumentParser:
    """The options of a conversation in the terminal (a parent parser)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("-m", "--model", type=name,
                         help=MODEL_HELP)
    options.add_argument("--base-url", metavar="URL", type=url,
                         help="an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    options.add_argument("--no-stream", action="store_true", help="do not stream replies")
    options.add_argument("--hide-reasoning", action="store_true",
                         help="do not show a reasoning model's streamed reasoning (--api "
                              "responses), which is shown dimmed before each reply")
    options.add_argument("--plain", action="store_true",
                         help="show replies as raw text, not rendered Markdown")
    options.add_argument("--no-log", action="store_true",
                         help="keep this conversation out of the local history")
    options.add_argument("--max-messages", type=positive_int, default=1000, metavar="N",
                         help="stop after N new messages (default: 1000)")
    add_model_options(options)
    add_otel_options(options)
    return options
