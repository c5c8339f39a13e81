"""``convo feedback export [--store URL] [--since ISO]``: the ratings people gave a served
bot's replies (API.md §19), as JSON lines on stdout — one object per rating:
``conversation``, ``message_index``, ``message``, ``rating``, ``comment``, ``user``, ``time``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._botfile import UsageProblem

EXIT_OK = 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    feedback = sub.add_parser(
        "feedback", parents=[common], help="export the feedback on a served bot's replies",
        description="Write the ratings people gave a served bot's replies (the thumbs of the "
                    "chat page) as JSON lines: conversation, message_index, message, rating, "
                    "comment, user, time.")
    feedback.add_argument("action", choices=["export"], help="export: write them to stdout")
    feedback.add_argument("--store", default="sqlite:///convo.db", metavar="URL",
                          help="the served bot's store: sqlite:///PATH (default: "
                               "sqlite:///convo.db) or postgresql://...")
    feedback.add_argument("--since", metavar="ISO",
                          help="only ratings given at or after this time (ISO 8601, UTC "
                               "unless it names a zone), e.g. 2026-11-01T00:00:00Z")
    feedback.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    import asyncio

    from ..serve._stores.listing import parse_iso

    if args.store == "memory":
        raise UsageProblem("--store memory holds nothing outside its server: give the "
                           "server's sqlite:///PATH or postgresql://... store")
    try:
        since = None if args.since is None else parse_iso(args.since, "--since")
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    for row in asyncio.run(_read(args.store, since)):
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
    return EXIT_OK


async def _read(url: str, since: int | None) -> list[dict[str, Any]]:
    from pathlib import Path

    from ..serve._stores import open_store

    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        raise UsageProblem(f"--store {url}: there is no such SQLite file (give the store "
                           "convo serve was started with)")
    try:
        store = open_store(url)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    await store.open()
    try:
        return [row.to_dict() for row in await store.feedback(since)]
    finally:
        await store.close()
