"""Shared by the OpenAI face's tests: a bot served under uvicorn on a free port, and the bots
they talk to (a name of its own: every folder's conftest is "conftest")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from serve_kit import TEMPLATE, Counted, reply  # noqa: F401  (Counted: for the tests)
from uvicorn_app import uvicorn_app

from convo import AssistantTemplate, FunctionModel, LinearTemplate, UserTemplate
from convo.serve import TokenTable, create_app

ANN, BOB = "ann-token", "bob-token"
USERS = TokenTable({ANN: {"user": "ann"}, BOB: {"user": "bob"}, "op-token": {
    "user": "olga", "role": "operator"}})

#: The header a served reply names its conversation in.
HEADER = "X-Convo-Conversation"
CLIENTS: list[openai.OpenAI] = []

#: One question, one answer, and the conversation is over.
ONCE = LinearTemplate([UserTemplate(), AssistantTemplate()])


@pytest.fixture(autouse=True)
def closed_clients() -> Iterator[None]:
    """Every SDK client a test made with ``client`` is closed after it (no socket left open)."""
    yield
    while CLIENTS:
        CLIENTS.pop().close()


def client(url: str, token: str = ANN) -> openai.OpenAI:
    """The OpenAI SDK's client of the app at ``url``, signed in with ``token``."""
    made = openai.OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0)
    CLIENTS.append(made)
    return made


@contextmanager
def served(template: Any = TEMPLATE, model: Any = None, **options: Any) -> Iterator[str]:
    """A bot served with sign-in by token (ann, bob, the operator olga) under uvicorn."""
    app = create_app(template, model or FunctionModel(reply), auth=USERS, **options)
    with uvicorn_app(app) as url:
        yield url
