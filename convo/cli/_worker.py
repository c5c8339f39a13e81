"""``convo worker FILE[:NAME] --temporal HOST:PORT``: run a bot's conversations as Temporal
workflows (``convo._temporal``): one workflow per conversation, its model calls, tool calls and
hooks as activities, the store as the record."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from .._botfile import (
    UsageProblem,
    bot_bounds,
    choose_model,
    find_template,
    load_file,
    split_target,
)
from ._options import add_served_model_options, positive_int

MISSING = ("convo worker needs temporalio, in the temporal extra: pip install -e "
           '".[temporal]" in convo\'s checkout, or '
           'pip install "convo[temporal]" from an index that serves this convo '
           '(the "convo" on the public package index is another project)')


#: The shortest ``--heartbeat-timeout``: model and tool activities heartbeat every second
#: (``_temporal/activities.py``), so a live worker's call never goes a whole timeout silent.
#: The longest: a cut-off turn is finished within 30 s of a live worker polling, which holds
#: only while the heartbeat timeout is at most 10 s.
MIN_HEARTBEAT_TIMEOUT, MAX_HEARTBEAT_TIMEOUT = 2.0, 10.0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    worker = sub.add_parser(
        "worker", parents=[common], help="run a bot's conversations on Temporal",
        description="Run a Temporal worker for the template NAME (default: template) of a "
                    "Python file: each conversation is a workflow (convo-<conversation id>), "
                    "its model calls, tool calls and hooks are activities, and its messages "
                    "are kept in --store (the same store as convo serve --engine).")
    worker.add_argument("target", metavar="FILE[:NAME]")
    worker.add_argument("--temporal", default="127.0.0.1:7233", metavar="HOST:PORT",
                        help="the Temporal server's frontend address (default: "
                             "127.0.0.1:7233, a local dev server's)")
    worker.add_argument("--namespace", default="default", help="(default: default)")
    worker.add_argument("--task-queue", default="convo", metavar="NAME",
                        help="(default: convo)")
    worker.add_argument("--store", default="sqlite:///convo.db", metavar="URL",
                        help="sqlite:///PATH (default: sqlite:///convo.db) or postgresql://...; "
                             "not memory: the HTTP front reads the same store")
    worker.add_argument("--continue-every", type=positive_int, default=100, metavar="N",
                        help="a conversation's workflow continues as new after N turns "
                             "(default: 100)")
    worker.add_argument("--heartbeat-timeout", type=_heartbeat_timeout, default=10.0,
                        metavar="SECONDS",
                        help="a model or tool call whose worker stops heartbeating this long "
                             "is run again by another worker: how long a conversation whose "
                             "worker died waits (from 2, as the calls heartbeat every "
                             "second, to 10, the default)")
    add_served_model_options(worker)
    worker.set_defaults(main=main)


def _heartbeat_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not MIN_HEARTBEAT_TIMEOUT <= value <= MAX_HEARTBEAT_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds from {MIN_HEARTBEAT_TIMEOUT:g} (model and tool "
            f"calls heartbeat every second) to {MAX_HEARTBEAT_TIMEOUT:g} (a cut-off turn is "
            f"finished within 30 s), got {text!r}")
    return value


def main(args: argparse.Namespace) -> int:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        print(MISSING, file=sys.stderr)
        return 2
    import asyncio  # here, not at the top: the parsers are built without it (any --help)

    if args.store == "memory":
        raise UsageProblem("--store memory cannot be shared with convo serve --engine: give "
                           "sqlite:///PATH or postgresql://...")
    from .._runner import Runner
    from .._temporal.bots import Bot, BotFile
    from ..serve._stores import open_store

    path, name = split_target(args.target)
    module = load_file(path)
    template = find_template(module, path, name)
    model, model_name = choose_model(args, module, path)
    if model_name:
        print(f"convo: {model_name}", file=sys.stderr, flush=True)
    runner = Runner(model, template, raise_errors=False, max_messages=args.max_messages,
                    **bot_bounds(module, path))
    try:
        store = open_store(args.store)
    except ValueError as exc:
        raise UsageProblem(f"--store: {exc}") from None
    bot = Bot(runner, store, continue_every=args.continue_every,
              heartbeat_s=args.heartbeat_timeout,
              file=BotFile(str(Path(path).resolve()), name, args.max_messages))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, bot))
    return 0


async def _serve(args: argparse.Namespace, bot: Any) -> None:
    import asyncio

    from temporalio.client import Client

    from .._temporal.worker import running, sandboxed

    await bot.store.open()
    try:
        client = await Client.connect(args.temporal, namespace=args.namespace)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        async with running(client, bot, task_queue=args.task_queue):
            print(f"convo worker: task queue {args.task_queue!r} on {args.temporal} "
                  f"(namespace {args.namespace}); workflow sandbox: {sandboxed(bot)}",
                  file=sys.stderr, flush=True)
            await stop.wait()
    finally:
        await bot.store.close()
