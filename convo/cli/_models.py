"""``convo models``: the models an OpenAI-compatible server offers, one name a line."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .._botfile import UsageProblem

EXIT_OK, EXIT_RUN_ERROR = 0, 1


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    models = sub.add_parser("models", parents=[common], help="list the models a server offers",
                            description="List the models an OpenAI-compatible server offers.")
    models.add_argument("--base-url", metavar="URL",
                        help="the server (default: $OPENAI_BASE_URL, else api.openai.com)")
    models.set_defaults(main=list_models)


def list_models(args: argparse.Namespace) -> int:
    import openai

    from ..models._openai import PLACEHOLDER_API_KEY
    from ..models._openai.errors import sdk_error

    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = os.environ.get("OPENAI_API_KEY")
    if not key and base_url is None:
        raise UsageProblem("no OPENAI_API_KEY and no --base-url: say which server to ask")
    where = base_url or "https://api.openai.com/v1"
    client = openai.OpenAI(api_key=key or PLACEHOLDER_API_KEY, base_url=base_url,
                           max_retries=0, timeout=30)
    try:
        names = sorted(model.id for model in client.models.list())
    except openai.OpenAIError as exc:
        error = sdk_error(exc, f"{where} (listing models)", model="", timeout=30,
                          max_retries=0)
        print(f"convo: error: {error}", file=sys.stderr)
        return EXIT_RUN_ERROR
    finally:
        client.close()
    if not names:
        print(f"convo: {where} offers no models", file=sys.stderr)
    for name in names:
        print(name)
    return EXIT_OK
