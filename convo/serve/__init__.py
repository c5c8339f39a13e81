"""Serving conversations to people: ``create_app`` gives an ASGI app (Starlette), ``convo
serve`` runs it. Needs the serve extra (Starlette, uvicorn, psycopg): in convo's checkout,
``pip install -e ".[serve]"``; ``import convo`` does not load any of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._faces import lazy as _lazy
from ._problems import INSTALL_SERVE as INSTALL_SERVE

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from starlette.applications import Starlette

    from .._context import ContextWindow
    from .._limits import Limits
    from .._runner import Runner
    from ..models._base import Model
    from ..templates._base import Template
    from ._engine import Engine
    from ._http.auth import JWT as JWT
    from ._http.auth import Auth
    from ._http.auth import SharedToken as SharedToken
    from ._http.auth import TokenTable as TokenTable
    from ._http.auth import TrustedHeader as TrustedHeader
    from ._stores.base import TurnStore


def create_app(template: Template, model: Model | None = None, *, store: str | TurnStore = "memory",
               token: str | None = None, limits: Limits | dict[str, Any] | None = None,
               context: ContextWindow | None = None, max_message_bytes: int = 32768,
               cache_size: int = 1000, max_messages: int = 1000,
               debug_errors: bool = False,
               max_attachment_bytes: int = 10 * 1024 * 1024, lease: float = 30.0,
               auth: Auth | None = None, title: str = "Chat",
               first_prompt: str | None = None,
               faces: Iterable[str] | None = None, tool_name: str | None = None,
               description: str | None = None, model_name: str | None = None,
               guards: Sequence[Any] = (), while_busy: str = "reject",
               max_queued: int = 16,
               engine: Callable[[Runner, TurnStore], Engine] | None = None) -> Starlette:
    """The ASGI app serving ``template`` (API.md §9): mount it in your own Starlette or FastAPI
    app, or run it under any ASGI server. ``store`` is ``"memory"``, ``"sqlite:///PATH"``,
    ``"postgresql://…"`` or a ``Store``; ``token`` makes every ``/api`` route but health ask
    for ``Authorization: Bearer <token>``; ``limits`` bounds what each conversation may use and
    ``context`` (a ``ContextWindow``) what each model call is sent, as on a ``Runner``;
    ``cache_size`` bounds the paused conversations kept in memory (the rest are rebuilt from
    the store when they go on); ``max_messages`` ends a conversation that reaches that many
    messages (as on a ``Runner``); ``max_attachment_bytes`` bounds each image, sound or file
    a message carries (413 over it; docs/parts.md). Requests are logged to the
    ``convo.serve`` logger; users see plain words for failures, whose causes go to the log,
    unless ``debug_errors``.
    ``lease``: seconds a turn's lock lasts unless renewed (it is renewed every third of it
    while the turn runs); a worker that dies lets go of its turns once their leases lapse.
    ``title`` names the bot on its pages (header and browser tab); ``first_prompt`` is shown
    on the chat page while a conversation has no assistant message yet (default "Ask me
    anything.").
    ``faces`` chooses the protocols served (§24): an iterable of ``"native"``, ``"agui"``,
    ``"ai-sdk"``, ``"openai"``, ``"mcp"`` (default: all); a face that is off answers JSON 404
    at its routes; ``/api/health`` is always served; the pages need ``"native"``. The ``"mcp"``
    face needs the mcp extra: without it ``/mcp`` answers 501 saying so, and naming it in
    ``faces`` is a ``ValueError``.
    ``tool_name`` and ``description`` are the bot's MCP tool's at ``/mcp`` (§25; default: the
    ``title``, characters outside ``[A-Za-z0-9_.-]`` replaced by ``_``, and a sentence naming
    it).
    ``model_name`` is the bot's name as a model at ``/v1`` (§25; default: ``title``).
    ``guards`` (``convo.guards``) check every conversation's messages, replies and tool calls
    as a ``Runner``'s do (API.md §27), on every face.
    ``while_busy`` is what a message sent while a turn runs does when it does not say
    (API.md §26): ``"reject"`` (409), ``"queue"``, ``"interrupt"`` or ``"steer"``;
    ``max_queued`` bounds each conversation's queue (429 past it).
    ``engine``: what runs the conversations' turns, made from the app's ``Runner`` and store
    (``engine(runner, store)``; default: convo's own engine, with the leases and cache above).
    ``convo serve --engine temporal://…`` passes the Temporal one, which runs each
    conversation as a workflow on ``convo worker`` processes (docs/serving.md, "Running on
    Temporal"); the app then makes no model call.
    """
    try:
        from ._http.app import API, build
    except ImportError as exc:
        raise ImportError(f"serving needs {exc.name or 'Starlette'}: {INSTALL_SERVE}") from exc
    from .._runner import Runner
    from ..templates._tree import termination_tools
    from ._engine import Engine
    from ._http.auth import from_options
    from ._http.faces import chosen
    from ._stores import open_store

    served = chosen(faces)  # before anything opens: an unknown face is a ValueError
    if not lease > 0:
        raise ValueError(f"lease must be a number of seconds above 0, got {lease!r}")
    from ._engine import WHILE_BUSY
    if while_busy not in WHILE_BUSY:
        raise ValueError(f"while_busy must be one of {', '.join(map(repr, WHILE_BUSY))}, got "
                         f"{while_busy!r}")
    if isinstance(max_queued, bool) or not isinstance(max_queued, int) or max_queued < 1:
        raise ValueError(f"max_queued must be a whole number of messages from 1, got "
                         f"{max_queued!r}")
    runner = Runner(model, template, limits=limits, context=context, raise_errors=False,
                    max_messages=max_messages, guards=guards)
    if engine is not None and not callable(engine):
        raise TypeError(f"engine must be a callable making the engine from the app's runner "
                        f"and store, engine(runner, store) (convo serve --engine temporal://... "
                        f"builds Temporal's), got {engine!r}")
    opened = open_store(store) if isinstance(store, str) else store
    turns = engine(runner, opened) if engine is not None else Engine(
        runner, opened, cache_size=cache_size, lease=lease, max_queued=max_queued)
    return build(API(turns, auth=from_options(token, auth), max_message_bytes=max_message_bytes,
                     while_busy=while_busy,
                     debug_errors=debug_errors, hidden_tools=termination_tools(template),
                     max_attachment_bytes=max_attachment_bytes, title=title,
                     first_prompt=first_prompt, faces=served, tool_name=tool_name,
                     tool_description=description, model_name=model_name))


# The ways of signing in, loaded when named (no Starlette needed).
_LAZY = {name: f"{__name__}._http.auth" for name in ("JWT", "SharedToken", "TokenTable",
                                                    "TrustedHeader")}
__getattr__, __dir__ = _lazy(__name__, _LAZY)

__all__ = ["create_app", *sorted(_LAZY)]
