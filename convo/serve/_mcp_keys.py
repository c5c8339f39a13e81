"""Idempotency keys on the MCP face (API.md §25: "idempotency keys hold on every face").

A ``tools/call`` carries its key in the request's ``_meta``, as ``"idempotencyKey"`` (the name
MCP's proposal for request idempotency gives it, camelCase as MCP's own ``progressToken``);
over HTTP (``/mcp``) the ``Idempotency-Key`` header of the POST that carries the call says the
same (both given: they must agree). The tool's arguments stay ``message`` and
``conversation_id``.

A key is kept as the other faces keep theirs (``Idempotency``, per conversation): a call that
names a conversation keeps it under that conversation; a call that starts one is scoped per
caller, the new conversation's id drawn from the caller and the key (as the OpenAI face
draws it), so a repeat finds the conversation the first call started. The record is the
call's result itself (a turn's texts, never the conversation's messages); a repeat answers it
again and runs nothing; the same key with other arguments is a tool error result. A call
refused before anything ran leaves the key unused. On a 2026-07-28 connection a call that
asked for approvals keeps its ``InputRequiredResult`` until the client's call with the
answers (it carries the same key) replaces it with the final result.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import mcp_types as types

#: The ``_meta`` key of a ``tools/call`` that holds its idempotency key.
KEY_META: Final = "idempotencyKey"
#: The longest key taken (as the HTTP faces' keys, a short opaque string).
MAX_KEY: Final = 255

_KINDS: Final[dict[str, type[types.CallToolResult] | type[types.InputRequiredResult]]] = {
    "result": types.CallToolResult, "input_required": types.InputRequiredResult}


class KeyProblem(Exception):
    """A key that cannot be used (the face answers a tool error result with these words)."""


def key_of(params: types.CallToolRequestParams, header: str | None) -> str | None:
    """The call's idempotency key: ``_meta.idempotencyKey``, else the HTTP header; ``None``
    without either."""
    meta = params.meta or {}
    given = meta.get(KEY_META)
    if given is not None and (not isinstance(given, str) or not 0 < len(given) <= MAX_KEY):
        raise KeyProblem(f'_meta "{KEY_META}" must be a string of 1 to {MAX_KEY} characters, '
                         f"got {given!r}")
    if header is not None and given is not None and header != given:
        raise KeyProblem(f'the Idempotency-Key header ({header!r}) and _meta "{KEY_META}" '
                         f"({given!r}) differ: send one key")
    key = given if given is not None else header
    if key is not None and not 0 < len(key) <= MAX_KEY:
        raise KeyProblem(f"an idempotency key must be 1 to {MAX_KEY} characters")
    return key


def started_id(user: str, key: str) -> str:
    """The id of the conversation a keyed call starts: the caller's and the key's (the OpenAI
    face draws a keyed new conversation's id the same way)."""
    named = hashlib.sha256(json.dumps([user, key], sort_keys=True).encode("utf-8"))
    return f"k{named.hexdigest()[:40]}"


def digest(arguments: dict[str, Any]) -> str:
    """What a repeat must match: the call's arguments (the MCP face's own digest, apart from
    any other face's)."""
    source = json.dumps(["mcp", arguments], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def record(result: types.CallToolResult | types.InputRequiredResult) -> dict[str, Any]:
    """The record of a call's result, kept with the key."""
    kind = "input_required" if isinstance(result, types.InputRequiredResult) else "result"
    return {"status": 200, "mcp": kind,
            "body": result.model_dump(mode="json", by_alias=True, exclude_none=True)}


def asked(kept: dict[str, Any]) -> str | None:
    """The ``requestState`` of a kept ``InputRequiredResult`` (the approvals it asked are
    answered by the client's next call), else ``None``."""
    if kept.get("mcp") != "input_required":
        return None
    state = kept["body"].get("requestState")
    return state if isinstance(state, str) else None


def replayed(kept: dict[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
    """The result a key's first call answered, again."""
    kind = _KINDS.get(kept.get("mcp", ""))
    if kind is None:
        raise KeyProblem("this idempotency key was used with other content (another face's "
                         "request): use a new key")
    return kind.model_validate(kept["body"])
