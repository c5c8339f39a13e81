"""``convo serve FILE[:NAME]``: serve a bot file's conversation over HTTP (API.md §9)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .._botfile import (
    UsageProblem,
    bot_bounds,
    bot_identity,
    bot_page,
    choose_model,
    find_template,
    load_file,
    split_target,
)
from ._options import add_served_model_options, positive_int, url
from ._otel import add_otel_options, setup

SPEC_ENV = "CONVO_SERVE_SPEC"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    # Why longer than 40 lines: one statement per flag of `convo serve`, read as its synopsis.
    serve = sub.add_parser(
        "serve", parents=[common], help="serve a template over HTTP, with a chat page",
        description="Serve the template NAME (default: template) from a Python file: an HTTP "
                    "API with streaming (POST /api/conversations, then POST "
                    "/api/conversations/ID/messages) and a chat page at /. Conversations are "
                    "kept in --store and survive restarts.")
    serve.add_argument("target", metavar="FILE[:NAME]")
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=_port, default=8000, help="(default: 8000)")
    serve.add_argument("--store", default="sqlite:///convo.db", metavar="URL",
                       help="sqlite:///PATH (default: sqlite:///convo.db), postgresql://..., "
                            "or memory")
    serve.add_argument("--workers", type=positive_int, default=1, metavar="N",
                       help="worker processes (several need a SQLite or Postgres store)")
    serve.add_argument("--token", default=os.environ.get("CONVO_SERVE_TOKEN"),
                       help="require Authorization: Bearer TOKEN on /api (default: "
                            "$CONVO_SERVE_TOKEN)")
    serve.add_argument("--users", metavar="FILE",
                       help='a token per person: a JSON file {"TOKEN": {"user": "ann", '
                            '"role": "operator"}} (role defaults to user)')
    serve.add_argument("--jwt-secret", default=os.environ.get("CONVO_JWT_SECRET"),
                       metavar="SECRET", help="sign-in by JWT signed with this HS256/384/512 "
                                              "secret; sub is the user (default: "
                                              "$CONVO_JWT_SECRET)")
    serve.add_argument("--jwt-jwks", metavar="URL", type=url,
                       help="sign-in by JWT checked against the issuer's keys at URL")
    serve.add_argument("--jwt-audience", metavar="AUD", help="the audience a JWT must name")
    serve.add_argument("--jwt-issuer", metavar="ISS", help="the issuer a JWT must name")
    serve.add_argument("--jwt-role-claim", default="role", metavar="CLAIM",
                       help='the claim naming the role; "operator" (or a list holding it) '
                            "makes an operator (default: role)")
    serve.add_argument("--trust-header", metavar="NAME",
                       help="behind a proxy that signs people in: the header naming the user "
                            "(a request without it gets 401)")
    serve.add_argument("--operators", default="", metavar="A,B",
                       help="with --trust-header: the users who are operators")
    serve.add_argument("--max-message-bytes", type=positive_int, default=32768, metavar="N",
                       help="refuse messages over N UTF-8 bytes with 413 (default: 32768)")
    serve.add_argument("--max-attachment-bytes", type=positive_int, default=10 * 1024 * 1024,
                       metavar="N", help="refuse an image, sound or file over N bytes in a "
                                         "message with 413 (default: 10485760, 10 MiB)")
    serve.add_argument("--cache-size", type=positive_int, default=1000, metavar="N",
                       help="paused conversations kept in memory per worker (default: 1000)")
    serve.add_argument("--lease", type=_seconds, default=30.0, metavar="SECONDS",
                       help="how long a turn's lock lasts unless renewed; renewed every third "
                            "of it while the turn runs, it lets a dead worker's turns go "
                            "(default: 30)")
    serve.add_argument("--while-busy", choices=("reject", "queue", "interrupt", "steer"),
                       default="reject",
                       help="what a message sent while a turn runs does when it does not say: "
                            "reject (409), queue, interrupt or steer (default: reject)")
    serve.add_argument("--max-queued", type=positive_int, default=16, metavar="N",
                       help="messages a conversation's queue holds at most; past it, 429 "
                            "(default: 16)")
    serve.add_argument("--faces", type=_faces, default=None, metavar="A,B",
                       help="the protocols served, among native, agui, ai-sdk, openai, mcp "
                            "(default: all); /api/health is always served, the pages need "
                            "native")
    serve.add_argument("--tool-name", metavar="NAME",
                       help="the name of the bot's MCP tool at /mcp (default: the file's "
                            "title, else its stem)")
    serve.add_argument("--model-name", metavar="NAME",
                       help="the bot's name as a model at /v1 (GET /v1/models; default: the "
                            "file's title, else its name without .py)")
    serve.add_argument("--engine", metavar="temporal://HOST:PORT[/NS]",
                       help="run conversations as Temporal workflows on convo worker "
                            "processes (the temporal extra; default: convo's own engine)")
    serve.add_argument("--task-queue", default="convo", metavar="NAME",
                       help="with --engine: the task queue of the workers (default: convo)")
    serve.add_argument("--log-format", choices=("text", "json"), default="text",
                       help="one line per request on stderr, as text or JSON (default: text)")
    serve.add_argument("--debug-errors", action="store_true",
                       help="show the cause of failures to every user (default: only in the "
                            "log; users see plain words)")
    add_served_model_options(serve)
    add_otel_options(serve)
    serve.set_defaults(main=run)


def _port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port up to 65535, got {value}")
    return value


def _faces(text: str) -> list[str]:
    from ..serve._http.faces import chosen

    try:
        return list(chosen(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in ("target", "store", "token", "max_message_bytes",
                                          "max_attachment_bytes",
                                          "cache_size", "max_messages", "lease", "log_format",
                                          "debug_errors", "model", "base_url", "mock",
                                          "no_stream", "tool_format", "tool_choice",
                                          "max_tokens", "temperature", "timeout", "otel",
                                          "otel_content", "api", "reasoning", "users",
                                          "jwt_secret", "jwt_jwks", "jwt_audience",
                                          "jwt_issuer", "jwt_role_claim", "trust_header",
                                          "operators", "faces", "tool_name", "model_name",
                                          "while_busy", "max_queued",
                                          "engine", "task_queue")}


def auth_of(spec: dict[str, Any]) -> Any:
    """The sign-in the flags ask for (at most one way), or ``None`` for ``--token``/none."""
    from ..serve import JWT, TokenTable, TrustedHeader

    ways = [flag for flag, key in (("--token", "token"), ("--users", "users"),
                                   ("--jwt-secret", "jwt_secret"), ("--jwt-jwks", "jwt_jwks"),
                                   ("--trust-header", "trust_header")) if spec.get(key)]
    if len(ways) > 1:
        raise UsageProblem(f"choose one way of signing in, got {' and '.join(ways)}")
    if spec.get("operators") and not spec.get("trust_header"):
        raise UsageProblem("--operators goes with --trust-header (with --users or a JWT, "
                         "the role says who is an operator)")
    if spec.get("users"):
        try:
            return TokenTable.from_file(spec["users"])
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    if spec.get("jwt_secret") or spec.get("jwt_jwks"):
        try:
            return JWT(spec.get("jwt_secret"), jwks_url=spec.get("jwt_jwks"),
                       audience=spec.get("jwt_audience"), issuer=spec.get("jwt_issuer"),
                       role_claim=spec.get("jwt_role_claim") or "role")
        except ValueError as exc:
            raise UsageProblem(f"--jwt-secret/--jwt-jwks: {exc}") from None
    if spec.get("trust_header"):
        operators = [name.strip() for name in spec.get("operators", "").split(",")]
        return TrustedHeader(spec["trust_header"], operators=[n for n in operators if n])
    return None


def _app(spec: dict[str, Any], *, quiet: bool) -> Any:
    from ..serve import create_app
    from ..serve._http.logs import show_logs

    path, name = split_target(spec["target"])
    module = load_file(path)
    template = find_template(module, path, name)
    bounds = bot_bounds(module, path)
    shown = bot_page(module, path)
    bot, description = bot_identity(module, path)
    args = argparse.Namespace(**spec)
    model, model_name = choose_model(args, module, path) if not quiet else \
        _quietly(choose_model, args, module, path)
    if model_name and not quiet:
        print(f"convo: {model_name}", file=sys.stderr, flush=True)
    if getattr(model, "start_wait", 0) is None:
        model.start_wait = 0  # a server answers now: a model server that is down is a 502
    show_logs(spec["log_format"])
    auth = auth_of(spec)
    return create_app(template, model, store=spec["store"],
                      token=spec["token"] if auth is None else None, auth=auth,
                      **bounds, **shown,
                      max_message_bytes=spec["max_message_bytes"],
                      max_attachment_bytes=spec["max_attachment_bytes"],
                      cache_size=spec["cache_size"], max_messages=spec["max_messages"],
                      debug_errors=spec["debug_errors"], lease=spec["lease"],
                      while_busy=spec.get("while_busy", "reject"),
                      max_queued=spec.get("max_queued", 16), faces=spec["faces"],
                      tool_name=spec.get("tool_name") or bot,
                      description=description, model_name=spec.get("model_name") or bot,
                      engine=_engine(spec))


def _engine(spec: dict[str, Any]) -> Any:
    """The engine ``--engine`` names, as ``create_app`` takes it (``engine(runner, store)``):
    Temporal's for ``temporal://…`` (built here, so serving itself never imports it); ``None``
    (convo's own) without the flag."""
    if spec.get("engine") is None:
        return None
    from functools import partial

    from .._temporal.engine import TemporalEngine, parse_engine

    address, namespace = parse_engine(spec["engine"])
    return partial(TemporalEngine, address=address, namespace=namespace,
                   task_queue=spec.get("task_queue") or "convo",
                   max_queued=spec.get("max_queued", 16))


def _check_engine(args: argparse.Namespace) -> None:
    """``--engine temporal://…``: the extra is there, the URL is one, the store is shared."""
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise UsageProblem(
            "convo serve --engine needs temporalio, in the temporal extra: pip install -e "
            '".[temporal]" in convo\'s checkout, or '
            'pip install "convo[temporal]" from an index that serves this convo '
            '(the "convo" on the public package index is another project)') from None
    from .._temporal.engine import parse_engine

    try:
        parse_engine(args.engine)
    except ValueError as exc:
        raise UsageProblem(f"--engine: {exc}") from None
    if args.store == "memory":
        raise UsageProblem("--store memory cannot be shared with convo worker: give "
                           "sqlite:///PATH or postgresql://...")



def _quietly(fn: Any, *args: Any) -> Any:
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


def worker_app() -> Any:
    """The app of one worker process (``--workers N``): its settings come from the parent."""
    spec = json.loads(os.environ[SPEC_ENV])
    setup(argparse.Namespace(**spec), quiet=True)
    return _app(spec, quiet=True)


def _check_store(url: str) -> None:
    """A SQLite store is opened once before serving, so a file or folder it cannot write is
    said now, not as a 503 on every request (a Postgres server may come up later: it is
    not)."""
    if not url.startswith("sqlite:///"):
        return
    import asyncio

    from ..serve._stores import open_store
    from ..serve._stores.base import StoreError

    async def check() -> None:
        store = open_store(url)
        try:
            await store.open()
        finally:
            await store.close()

    try:
        asyncio.run(check())
    except StoreError as exc:
        raise UsageProblem(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..serve._stores import open_store
    except ImportError as exc:
        from ..serve import INSTALL_SERVE

        raise UsageProblem(f"convo serve needs {exc.name or 'uvicorn'}: {INSTALL_SERVE}"
                           ) from None
    try:
        open_store(args.store)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    _check_store(args.store)
    if args.engine is not None:
        _check_engine(args)
    if args.workers > 1 and args.store == "memory":
        raise UsageProblem("--workers N needs a store they share: --store sqlite:///PATH or "
                           "--store postgresql://...; memory is one process's")
    spec = _spec(args)
    app = _app(spec, quiet=False)  # any mistake in the file is said here, once
    where = f"http://{args.host}:{args.port}"
    print(f"convo: serving {args.target} at {where} (store {args.store}; Ctrl-C stops)",
          file=sys.stderr, flush=True)
    if args.workers == 1:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                    timeout_graceful_shutdown=30)
    else:
        os.environ[SPEC_ENV] = json.dumps(spec)
        uvicorn.run("convo.cli._serve:worker_app", factory=True, host=args.host,
                    port=args.port, workers=args.workers, log_level="warning",
                    timeout_graceful_shutdown=30)
    return 0
