"""SmokeModel: a model that needs no script, for smoke-testing a whole bot in one line.

Offered tools, it calls each of them once (in one batch), with arguments made up from the
tool's JSON schema; once their results are in, it answers with a summary of them. With no
tools it answers ``"SmokeModel reply N."``. So every tool of a bot runs and every template
gets a reply, without writing a script::

    session = Runner(SmokeModel(), bot, ScriptedInterface(["hi"])).run()
    assert session.outcome.status != "error"

``SmokeModel().handle`` answers an ``OpenAIServer``'s requests the same way, so the real
OpenAI client (both APIs) runs with no key and no script: ``--model smoke`` on the command line.

The name does not start with ``Test``: pytest would try to collect a ``TestModel`` class
imported into a test module as a test class (and warn that it cannot, which a suite run
with warnings as errors turns into a failure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._messages import Message, ToolCall
from ..models._base import DeltaCallback, SyncModel, ToolSchemas

#: convo's termination family: calling them ends the turn or the conversation, so by default
#: SmokeModel leaves them alone (a restriction injection makes it call ``finish`` or kin).
TERMINATION: Final = frozenset({"finish", "finish_response", "finish_task", "task_completed",
                                "end_conversation"})
_FINISHERS: Final = ("finish", "finish_response", "finish_task")


class _Cycle(Exception):
    """No finite value down this branch: it refers back to a schema being filled in."""


def example_value(schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None) -> Any:
    """A value that fits a JSON schema: the first enum value, the minimum, ``"example"``,
    one item for an array, every property for an object; the first non-null option of an
    ``anyOf``/``oneOf``.

    A schema that refers to itself (a recursive pydantic model, an MCP tool's ``$ref``
    cycle) stops at the cycle with the shortest value that is still valid: an optional field
    that would go round again is left out, such an array is empty (when ``minItems``
    allows), an ``anyOf`` takes an option that ends (``null``, say). A schema that has no
    finite value at all (a required field of its own type) gets an empty object."""
    defs = defs if defs is not None else schema.get("$defs") or schema.get("definitions") or {}
    try:
        return _value(schema, _Refs(schema, defs), frozenset({"#"}))
    except _Cycle:
        return {}


class _Refs:
    """Where each ``$ref`` of one schema points: ``#`` (the whole schema), a JSON pointer
    into it, else a definition found by the pointer's last name (``defs``)."""

    def __init__(self, root: Mapping[str, Any], defs: Mapping[str, Any]) -> None:
        self.root, self.defs = root, defs

    def __call__(self, ref: str) -> Mapping[str, Any]:
        if ref.startswith("#"):
            node: Any = self.root
            for step in ref[1:].split("/")[1:]:
                step = step.replace("~1", "/").replace("~0", "~")
                node = node.get(step) if isinstance(node, Mapping) else None
            if isinstance(node, Mapping):
                return node
        found = self.defs.get(ref.rsplit("/", 1)[-1], {})
        return found if isinstance(found, Mapping) else {}


def _value(schema: Mapping[str, Any], refs: _Refs, path: frozenset[str]) -> Any:
    if "$ref" in schema:
        ref = str(schema["$ref"])
        if ref in path:
            raise _Cycle(ref)
        return _value(refs(ref), refs, path | {ref})
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:  # a null default says less than the type does
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = schema[key]
            if key != "allOf":  # a non-null option first, then whichever ends
                options = sorted(options, key=lambda o: o.get("type") == "null")
            for option in options:
                try:
                    return _value(option, refs, path)
                except _Cycle:
                    continue
            raise _Cycle(key)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _of_type(str(kind), schema, refs, path)


def _of_type(kind: str, schema: Mapping[str, Any], refs: _Refs, path: frozenset[str]) -> Any:
    if kind == "integer":
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        least = int(schema.get("minItems", 0))
        try:
            item = _value(schema.get("items") or {}, refs, path)
        except _Cycle:
            if least:
                raise
            return []
        return [item] * max(1, least)
    if kind == "object":
        required = set(schema.get("required") or ())
        value = {}
        for name, sub in (schema.get("properties") or {}).items():
            try:
                value[name] = _value(sub, refs, path)
            except _Cycle:
                if name in required:
                    raise
        return value
    text = "example"
    return text.ljust(int(schema.get("minLength", 0)), "x")


def example_arguments(tool_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for one OpenAI function-tool schema, made up from its parameters."""
    function = tool_schema.get("function", tool_schema)
    value = example_value(function.get("parameters") or {"type": "object"})
    return value if isinstance(value, dict) else {}


def _name(tool_schema: Mapping[str, Any]) -> str:
    return str(tool_schema.get("function", tool_schema).get("name", ""))


class SmokeModel(SyncModel):
    """A model that needs no script: it calls each offered tool once, then sums up.

    - ``tools``: the names of the tools to call (default: every offered tool but convo's
      termination family, ``TERMINATION``). Each is called once per turn (a turn starts at
      the last user message).
    - After a restriction injection (a system message after its text), it calls the first
      offered finish tool (``finish``, ``finish_response``, ``finish_task``).
    - ``.calls`` counts its model calls.
    """

    __slots__ = ("_ids", "calls", "tools")

    def __init__(self, *, tools: Iterable[str] | None = None) -> None:
        self.tools = None if tools is None else frozenset(tools)
        self.calls = 0
        self._ids = 0

    def _wanted(self, name: str) -> bool:
        return name not in TERMINATION if self.tools is None else name in self.tools

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        self.calls += 1
        turn = _this_turn(messages)
        called = {c.name for m in turn for c in m.tool_calls}
        to_call = [t for t in tools if self._wanted(_name(t)) and _name(t) not in called]
        if to_call:
            return Message("assistant", "", tool_calls=tuple(
                self._call(_name(t), example_arguments(t)) for t in to_call))
        offered = [_name(t) for t in tools]
        finisher = next((n for n in _FINISHERS if n in offered and n not in called), None)
        if finisher is not None and turn and turn[-1].role == "system":
            return Message("assistant", "", tool_calls=(self._call(finisher, {}),))
        reply = _summary(turn) or f"SmokeModel reply {self.calls}."
        if on_delta is not None:
            on_delta(reply)
        return Message("assistant", reply)

    def handle(self, body: Mapping[str, Any]) -> Message:
        """The reply to a request an ``OpenAIServer`` received (Chat Completions or the
        Responses API), so that the real OpenAI client runs against it with no script:
        ``OpenAIServer(handler=SmokeModel().handle)`` (what ``--model smoke`` does). A
        request that asks for reasoning gets a reasoning item with a one-line summary."""
        from ._server.chat_wire import message_from_wire
        from ._server.responses_wire import messages_from_input

        if "input" in body:
            raw = body["input"]
            messages = messages_from_input([{"role": "user", "content": raw}]
                                           if isinstance(raw, str) else raw)
        else:
            messages = [message_from_wire(m) for m in body.get("messages") or ()]
        reply = self.complete(messages, tuple(body.get("tools") or ()))
        if not body.get("reasoning"):
            return reply
        thought = f"SmokeModel thinks about call {self.calls}."
        item = {"type": "reasoning", "id": f"rs_smoke_{self.calls}",
                "summary": [{"type": "summary_text", "text": thought}]}
        return Message("assistant", reply.content, tool_calls=reply.tool_calls,
                       metadata={"reasoning": [item]})

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        self._ids += 1
        return ToolCall(f"smoke_{self._ids}", name, arguments)

    def __repr__(self) -> str:
        return f"SmokeModel({self.calls} calls)"


def _this_turn(messages: Sequence[Message]) -> list[Message]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return list(messages[i + 1:])
    return list(messages)


def _summary(turn: Sequence[Message]) -> str:
    """One line per tool result of this turn: the call and what it gave."""
    calls = {c.id: c for m in turn for c in m.tool_calls}
    lines = []
    for message in turn:
        call = calls.get(message.tool_call_id or "")
        if message.role == "tool" and call is not None:
            result = " ".join(message.text.split())
            lines.append(f"- {call.name}({call.arguments_json()}) -> {result[:200]}")
    if not lines:
        return ""
    return f"SmokeModel called {len(lines)} tool{'s' * (len(lines) != 1)}:\n" + "\n".join(lines)
