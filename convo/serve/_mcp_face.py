"""A served bot as one MCP tool (API.md §25): the MCP face, with no transport of its own.

``MCPFace`` makes an ``mcp`` SDK ``Server`` (its low-level API) with one tool, named after the
bot, that runs one turn of a conversation on the engine per call: ``message`` is the user's
message, ``conversation_id`` (left out: a new conversation) says which conversation goes on.
The result's text is the turn's assistant texts joined by a blank line; its
``structuredContent`` is ``{"conversation_id", "status", "waiting_for"}``.

Where the bot waits for the user's approval, the client is asked through elicitation when it
declared form elicitation: on a 2026-07-28 connection the call answers an
``InputRequiredResult`` (one form per pending call, in order; its ``requestState`` names the
conversation and the calls, and the client's retry carries the answers), on an older one an
``elicitation/create`` request per call, sent while the call runs. Otherwise, and always for an
approval routed to an operator, the reply says what the conversation waits for. Refusals
(no such conversation, a conversation that waits for something else, one that ended) are tool
error results, so a model reading them can say so.

A conversation waiting for a retry (its last turn's model call failed) is retried by calling
the tool again with its ``conversation_id`` and the same message: the failed turn runs again
(the message is not added twice), which works over every transport (stdio has no other
route); another message meanwhile is a tool error result saying so. Idempotency keys: a call's
``_meta`` (``convo.serve._mcp_keys``).

The transports are the caller's: ``convo mcp`` serves the server over stdio
(``convo.cli._mcp``), ``convo serve`` at ``/mcp`` over Streamable HTTP
(``convo.serve._http.mcp``), each saying who the caller is (``Owner``).

(Over 300 lines: the tool's schemas and the words of its replies are here with the calls, as
one idea — a call's way from arguments to a turn, and from where the turn stopped to a result.)
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import attrs
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._messages import Message
from .._requests import Approve
from ._engine import Engine
from ._live import Live
from ._mcp_keys import KeyProblem, asked, digest, key_of, record, replayed, started_id
from ._problems import Refused
from ._stores.base import Idempotency

#: Who calls: the user the conversations of a call belong to (``ctx`` is the SDK's context).
Owner = Callable[[Any], Awaitable[str]]

#: A conversation waiting for a failed model call's retry, in the words users see.
MODEL_FAILED: Final = "the bot's model call failed; the conversation waits for a retry"
#: How a client retries it (any transport: the tool is the only route over stdio).
RETRY_HINT: Final = "call the tool again with this conversation_id and the same message to retry"

logger: Final = logging.getLogger("convo.serve")  # where a failure's cause goes

_NOT_A_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]")

#: The form an approval is asked with.
APPROVAL_FORM: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve",
                    "description": "true runs the call; false rejects it"},
        "reason": {"type": "string", "title": "Reason",
                   "description": "why (optional; the bot is told when it is rejected)"},
    },
    "required": ["approve"],
}

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what the user says to the bot"},
        "conversation_id": {
            "type": "string",
            "description": "the conversation to go on with: the conversation_id of an earlier "
                           "result (leave it out to start a new conversation)"},
    },
    "required": ["message"],
}

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "conversation_id": {"type": "string"},
        "status": {"type": "string", "enum": ["waiting", "ended"]},
        "waiting_for": {"type": ["object", "null"]},
    },
    "required": ["conversation_id", "status", "waiting_for"],
}


def tool_name(name: str) -> str:
    """The MCP tool's name for a bot named ``name``: characters outside ``[A-Za-z0-9_.-]``
    become ``_``."""
    return _NOT_A_NAME.sub("_", name.strip()) or "bot"


def default_description(name: str) -> str:
    return f"Talk with {name}: send the user's message, get the bot's reply."


@attrs.frozen(slots=True)
class BotTool:
    """The tool a bot is: its name (already a tool name) and description."""

    name: str
    description: str


class ToolProblem(Exception):
    """A call the face refuses: a tool error result with these words."""


@attrs.define(slots=True)
class Call:
    """One ``tools/call`` on its way: the id a keyed call starts its conversation under, and
    whether a turn was started (a refusal before that leaves an idempotency key unused)."""

    start_as: str | None = None
    ran: bool = False


class MCPFace:
    """One bot's MCP tool on ``engine``; ``owner`` says whose conversations a call acts on;
    ``approve_hint`` says, in a waiting reply, where a user approves a call otherwise
    (``{id}`` in it: the conversation's id)."""

    def __init__(self, engine: Engine, tool: BotTool, owner: Owner, *,
                 approve_hint: str = "",
                 header_key: Callable[[Any], str | None] | None = None) -> None:
        self.engine = engine
        self.tool = tool
        self.owner = owner
        self.approve_hint = approve_hint
        # The transport's own idempotency key of a call (``/mcp``: the HTTP header), if any.
        self.header_key = header_key

    def server(self, *, name: str | None = None) -> Server[Any]:
        """The SDK server answering ``tools/list`` and ``tools/call``."""
        from .._version import __version__

        return Server(name or self.tool.name, version=__version__,
                      description=self.tool.description,
                      on_list_tools=self._list, on_call_tool=self._call)

    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name=self.tool.name, description=self.tool.description, input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA)])

    async def _call(self, ctx: Any, params: types.CallToolRequestParams
                    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != self.tool.name:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown tool {params.name!r}: this server has {self.tool.name!r}")
        try:
            owner = await self.owner(ctx)
            key = key_of(params, None if self.header_key is None else self.header_key(ctx))
            if key is not None:
                return await self._keyed(ctx, owner, params, key)
            return await self._run(ctx, owner, params, Call())
        except (ToolProblem, Refused, KeyProblem) as exc:
            return _error(str(exc))

    async def _run(self, ctx: Any, owner: str, params: types.CallToolRequestParams, call: Call
                   ) -> types.CallToolResult | types.InputRequiredResult:
        if params.request_state is not None:
            return await self._answered(ctx, owner, params, call)
        return await self._said(ctx, owner, params.arguments or {}, call)

    # -- a call -----------------------------------------------------------------------------

    async def _said(self, ctx: Any, owner: str, arguments: dict[str, Any], call: Call
                    ) -> types.CallToolResult | types.InputRequiredResult:
        """A message: a new conversation's first, or one of the conversation named."""
        message, conversation_id = _arguments(arguments)
        said: list[str] = []
        if conversation_id is None:
            call.ran = True
            code, body = await self.engine.create({}, None, owner=owner,
                                                  conversation_id=call.start_as)
            said += _texts(body)
            self._check(code, body)
            conversation_id = body["id"]
        async with self._live(conversation_id, owner) as live:
            if live.waits == "retry":
                return await self._retried(ctx, live, message, said, call)
            if live.waits == "approval":  # (the engine's words name routes of the HTTP API)
                raise ToolProblem("a message cannot be taken while an approval is pending: "
                                  + " ".join(self._waiting_text(live, live.waiting_for())))
            self.engine.expect(live, ("user", "operator"), "a message")
            call.ran = True
            code, body = await self.engine.message(live, message, None)
            said += _texts(body)
            self._check(code, body)
            return await self._settled(ctx, live, said)

    async def _retried(self, ctx: Any, live: Live, message: str, said: list[str], call: Call
                       ) -> types.CallToolResult | types.InputRequiredResult:
        """A call on a conversation that waits for a retry: the same message as the failed
        turn's retries it; a conversation whose first run failed (no message yet) is retried,
        then takes the message; another message is refused, saying how to retry."""
        failed = _last_user_text(live)
        if failed is not None and failed.strip() != message.strip():
            raise ToolProblem(f"conversation {live.id!r} waits for a retry of its last turn, "
                              f"which failed: call the tool again with the same message "
                              f"({failed!r}) to retry it, then send this one")
        call.ran = True
        code, body = await self.engine.retry(live, None)
        said += _texts(body)
        self._check(code, body)
        if failed is None and live.waits == "user":  # the first run failed: now the message
            code, body = await self.engine.message(live, message, None)
            said += _texts(body)
            self._check(code, body)
        return await self._settled(ctx, live, said)

    async def _keyed(self, ctx: Any, owner: str, params: types.CallToolRequestParams, key: str
                     ) -> types.CallToolResult | types.InputRequiredResult:
        """A call under an idempotency key (``convo.serve._mcp_keys``): a repeat answers what
        the first answered and runs nothing; other arguments under the key are refused."""
        store = self.engine.store
        if not isinstance(store, Idempotency):
            raise ToolProblem(f"this server's store ({type(store).__name__}) keeps no "
                              "idempotency records: call without an idempotency key")
        arguments = params.arguments or {}
        if params.request_state is None:
            _arguments(arguments)  # (a call refused for its arguments keeps no key)
        given = arguments.get("conversation_id")
        scope = given if isinstance(given, str) else started_id(owner, key)
        wanted = digest(arguments)
        for _ in range(2):  # (a claim lost to a concurrent first call: read what it kept)
            known = await store.idempotent(scope, key)
            if known is not None:
                kept_digest, kept = known
                if kept_digest != wanted:
                    raise ToolProblem("this idempotency key was used with other arguments: "
                                      "use a new key for another call")
                if kept is None:
                    raise ToolProblem("a call with this idempotency key is still running (or "
                                      "was cut off): wait, or use a new key")
                if params.request_state is None or asked(kept) != params.request_state:
                    return replayed(kept)
                break  # the answers to the approvals its first call asked: they go on
            if await store.remember(scope, key, wanted, None):
                break
        call = Call(start_as=None if isinstance(given, str) else scope)
        try:
            result = await self._run(ctx, owner, params, call)
        except (ToolProblem, Refused) as exc:
            if not call.ran:  # refused before any turn: the key stays unused
                await store.forget(scope, key)
                raise
            result = _error(str(exc))
        await store.remember(scope, key, wanted, record(result))
        return result

    async def _answered(self, ctx: Any, owner: str, params: types.CallToolRequestParams,
                        call: Call) -> types.CallToolResult | types.InputRequiredResult:
        """A 2026-07-28 retry: the answers to the approvals an ``InputRequiredResult`` asked."""
        state = _read_state(params.request_state or "")
        async with self._live(state["conversation_id"], owner) as live:
            pending = live.pending
            if not isinstance(pending, Approve) or [c.id for c in pending.calls] != state["calls"]:
                raise ToolProblem("these approvals are no longer pending in conversation "
                                  f"{live.id!r}: call again with a message")
            responses = params.input_responses or {}
            missing = [c.id for c in pending.calls if c.id not in responses]
            if missing:
                raise ToolProblem(f"answer every approval asked; missing: {', '.join(missing)}")
            decisions = [_decision(c.id, responses[c.id]) for c in pending.calls]
            call.ran = True
            code, body = await self.engine.approve(live, decisions, None, operator=False)
            said = [*state["said"], *_texts(body)]
            self._check(code, body)
            return await self._settled(ctx, live, said)

    @contextlib.asynccontextmanager
    async def _live(self, conversation_id: str, owner: str) -> AsyncIterator[Live]:
        """The conversation, its turn's lease held, if it is ``owner``'s (else: none such)."""
        stored = await self.engine.store.load(conversation_id, messages=False)
        if stored is None or stored.owner != owner:
            raise ToolProblem(f"no conversation {conversation_id!r}: start one by leaving "
                              "conversation_id out")
        async with self.engine.turn(conversation_id, stored) as live:
            yield live

    @staticmethod
    def _check(code: int, body: dict[str, Any]) -> None:
        if code >= 400:  # the cause to the log; the caller is told in plain words
            logger.warning("MCP tool call: conversation %s: %s", body.get("id"),
                           body.get("error"), extra={"convo_fields": None})
        if code == 502:
            raise ToolProblem(f"{MODEL_FAILED} (conversation {body['id']!r}): {RETRY_HINT}")
        if code >= 400:
            raise ToolProblem(f"the conversation failed (conversation {body.get('id')!r})")

    # -- where the turn stopped --------------------------------------------------------------

    async def _settled(self, ctx: Any, live: Live, said: list[str]
                       ) -> types.CallToolResult | types.InputRequiredResult:
        """The result once the turn stopped: approvals the client answers are asked (and the
        turn goes on); else the reply, with what the conversation waits for."""
        while _elicitable(live) and _form_elicitation(ctx):
            pending = live.pending
            assert isinstance(pending, Approve)
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                return _input_required(live, pending, said)
            decisions = []
            for call in pending.calls:
                answer = await ctx.session.elicit_form(
                    _ask(live.id, call.name, call.arguments), APPROVAL_FORM,
                    related_request_id=ctx.request_id)
                decisions.append(_decision(call.id, answer))
            code, body = await self.engine.approve(live, decisions, None, operator=False)
            said += _texts(body)
            self._check(code, body)
        return self._reply(live, said)

    def _reply(self, live: Live, said: list[str]) -> types.CallToolResult:
        waiting = live.waiting_for()
        shown = waiting
        if waiting is not None and waiting.get("type") == "retry":
            shown = {**waiting, "error": MODEL_FAILED}
        text = "\n\n".join([*said, *self._waiting_text(live, waiting)])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={"conversation_id": live.id, "status": live.status,
                                "waiting_for": shown})

    def _waiting_text(self, live: Live, waiting: dict[str, Any] | None) -> list[str]:
        """The words a reply adds for what the conversation waits for, if not the user."""
        kind = None if waiting is None else waiting.get("type")
        if kind == "approval":
            assert waiting is not None
            calls = ", ".join(_call_text(c["name"], c["arguments"]) for c in waiting["calls"])
            if waiting["approver"] == "operator":
                return [f"Conversation {live.id!r} waits for an operator to approve or reject "
                        f"{calls}."]
            return [f"Conversation {live.id!r} waits for your approval of {calls}"
                    f"{self.approve_hint.format(id=live.id)}."]
        if kind == "operator":
            return [f"Conversation {live.id!r} is handed to a person, who answers it."]
        if kind == "retry":
            return [f"Conversation {live.id!r}: {MODEL_FAILED}: {RETRY_HINT}."]
        return []


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


def _arguments(arguments: dict[str, Any]) -> tuple[str, str | None]:
    """The call's ``message`` and ``conversation_id`` (``None``: start one), checked."""
    message = arguments.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolProblem('"message" must be a non-empty string: what the user says')
    unknown = sorted(set(arguments) - {"message", "conversation_id"})
    if unknown:
        raise ToolProblem(f"unknown arguments {', '.join(map(repr, unknown))}: the "
                          "arguments are message and conversation_id")
    conversation_id = arguments.get("conversation_id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise ToolProblem('"conversation_id" must be a string: the conversation_id of an '
                          "earlier result")
    return message, conversation_id


def _last_user_text(live: Live) -> str | None:
    """The text of the conversation's last user message (the failed turn's), if it has one."""
    for message in reversed(live.session.messages):
        if message.role == "user":
            return message.text
    return None


def _elicitable(live: Live) -> bool:
    """Whether the conversation waits for approvals a user may give (none an operator's)."""
    pending = live.pending
    return isinstance(pending, Approve) and not pending.needs_operator


def _form_elicitation(ctx: Any) -> bool:
    """Whether the client declared form elicitation (an empty ``elicitation`` is form)."""
    capabilities = ctx.session.client_capabilities
    asked = None if capabilities is None else capabilities.elicitation
    return asked is not None and (asked.form is not None or asked.url is None)


def _input_required(live: Live, pending: Approve, said: list[str]) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests={call.id: types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=_ask(live.id, call.name, call.arguments), requested_schema=APPROVAL_FORM))
            for call in pending.calls},
        request_state=json.dumps({"conversation_id": live.id,
                                  "calls": [c.id for c in pending.calls], "said": said}))


def _read_state(text: str) -> dict[str, Any]:
    """The ``requestState`` a retry echoes (the client's to forge: only names a conversation
    the caller must own, and calls that must be the pending ones)."""
    try:
        state = json.loads(text)
    except ValueError:
        state = None
    if not (isinstance(state, dict) and isinstance(state.get("conversation_id"), str)
            and isinstance(state.get("calls"), list)
            and all(isinstance(c, str) for c in state["calls"])
            and isinstance(state.get("said"), list)
            and all(isinstance(s, str) for s in state["said"])):
        raise ToolProblem("requestState is not one this server gave: call again with a message")
    return state


def _decision(call_id: str, answer: Any) -> dict[str, Any]:
    """An elicitation's answer as an approval decision: ``accept`` with ``approve: true``
    approves; anything else rejects (with the reason given, if any)."""
    content = getattr(answer, "content", None) or {}
    accepted = getattr(answer, "action", None) == "accept"
    reason = content.get("reason") if accepted else None
    return {"call_id": call_id, "approve": accepted and content.get("approve") is True,
            "reason": reason if isinstance(reason, str) and reason.strip() else None}


def _ask(conversation_id: str, name: str, arguments: Any) -> str:
    return (f"Approve {_call_text(name, arguments)} "
            f"(conversation {conversation_id!r})?")


def _call_text(name: str, arguments: Any) -> str:
    return f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


def _texts(body: dict[str, Any]) -> list[str]:
    """The assistant texts a turn added, in order (tool calls and results not shown)."""
    texts = []
    for shown in body.get("added", ()):
        if shown.get("role") == "assistant":
            text = Message.from_dict(shown).text.strip()
            if text:
                texts.append(text)
    return texts
