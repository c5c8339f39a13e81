"""Waiting for a local server that is still starting (llama.cpp, Ollama and vLLM take a few
seconds to load a model, and refuse connections meanwhile).

For a base URL on this machine, a refused connection is tried again for up to
``LOCAL_START_WAIT_S`` seconds (``$CONVO_START_WAIT`` changes it; 0 turns it off), with one
``waiting for the server`` note on the ``convo`` logger (shown on stderr when logging is not
configured). Elsewhere a refused connection fails as before: a remote server that refuses is
down, not starting.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlsplit

import openai

from .errors import is_connect_error

LOCAL_START_WAIT_S: Final = 30.0
LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})

logger = logging.getLogger("convo")


def is_local(base_url: str | None) -> bool:
    """Whether a base URL points at this machine."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    return host in LOCAL_HOSTS or bool(host and host.startswith("127."))


def _env_wait() -> float:
    """``$CONVO_START_WAIT`` seconds (a number), else ``LOCAL_START_WAIT_S``."""
    import os

    try:
        return float(os.environ.get("CONVO_START_WAIT") or LOCAL_START_WAIT_S)
    except ValueError:
        return LOCAL_START_WAIT_S


class ServerWait:
    """Decides, failure by failure, whether to try a refused connection again and when.

    ``limit`` seconds in all (``None``: ``LOCAL_START_WAIT_S`` for a local base URL, 0 for any
    other); ``retry_after(exc)`` gives the pause before the next try, or ``None`` to give up.
    """

    __slots__ = ("_started", "_tries", "limit", "where")

    def __init__(self, base_url: str | None, where: str, limit: float | None = None) -> None:
        if limit is None:
            limit = _env_wait() if is_local(base_url) else 0.0
        self.limit = limit
        self.where = where
        self._tries = 0
        self._started = 0.0

    def retry_after(self, exc: BaseException) -> float | None:
        cause = exc.__cause__ or exc.__context__
        if self.limit <= 0 or cause is None or not is_connect_error(cause):
            return None
        now = time.monotonic()
        if self._tries == 0:
            self._started = now
            logger.warning("waiting for the server at %s to start (up to %g s)",
                           self.where, self.limit)
        elif now - self._started >= self.limit:
            return None
        self._tries += 1
        return min(0.1 * 2.0 ** self._tries, 2.0)


def create_waiting(create: Callable[..., Any], kwargs: dict[str, Any], wait: ServerWait) -> Any:
    """``create(**kwargs)``, tried again while ``wait`` says the server is still starting."""
    while True:
        try:
            return create(**kwargs)
        except openai.APIConnectionError as exc:
            delay = wait.retry_after(exc)
            if delay is None:
                raise
            time.sleep(delay)


async def acreate_waiting(create: Callable[..., Awaitable[Any]], kwargs: dict[str, Any],
                          wait: ServerWait) -> Any:
    """``await create(**kwargs)``, tried again while the server is still starting."""
    while True:
        try:
            return await create(**kwargs)
        except openai.APIConnectionError as exc:
            delay = wait.retry_after(exc)
            if delay is None:
                raise
            await asyncio.sleep(delay)
