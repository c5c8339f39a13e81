"""Shared by the AI SDK tests: an app served on a free port, and a chat driven against it by
the `ai` package itself (node): its `DefaultChatTransport` posts the `useChat` body and parses
the stream, its `readUIMessageStream` builds the UI message from the chunks, as `useChat`
does. The script answers approvals as `addToolApprovalResponse` does."""

from __future__ import annotations

import json
from typing import Any

from node_clients import run_node
from uvicorn_app import uvicorn_app as serving  # noqa: F401  (for the tests)

CHAT = """
import { DefaultChatTransport, readUIMessageStream } from "ai";
const [url, chatId, opsJson, headersJson, bodyJson] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url + "/ai-sdk/chat",
  headers: JSON.parse(headersJson), body: JSON.parse(bodyJson) });
const messages = [];
const runs = [];
for (const op of JSON.parse(opsJson)) {
  let trigger = "submit-message";
  let messageId;
  if (op.say) messages.push({ id: op.say[0], role: "user",
                              parts: [{ type: "text", text: op.say[1] }] });
  if (op.decide !== undefined) {
    for (const part of messages.at(-1).parts) {
      if (part.state === "approval-requested") {
        part.state = "approval-responded";
        part.approval = { id: part.approval.id, approved: op.decide, reason: op.reason };
      }
    }
  }
  if (op.output) {  // as addToolOutput leaves the tool parts the client ran
    const last = messages.at(-1);
    last.parts = last.parts.map((part) => part.type.startsWith("tool-")
      && part.state === "input-available" && part.type.slice(5) in op.output
      ? { ...part, state: "output-available", output: op.output[part.type.slice(5)] }
      : part);
  }
  if (op.regenerate) {  // as Chat.regenerate({ messageId }) slices the chat
    trigger = "regenerate-message";
    if (typeof op.regenerate === "number") {
      messageId = messages[op.regenerate].id;
      messages.splice(op.regenerate);
    } else if (messages.at(-1).role === "assistant") messages.pop();
  }
  const last = messages.at(-1);
  const continued = last.role === "assistant" ? structuredClone(last) : undefined;
  const run = { chunks: [], errors: [] };
  try {
    const stream = await transport.sendMessages({ chatId, messages, trigger,
      messageId: messageId ?? continued?.id, abortSignal: undefined });
    const [mine, reader] = stream.tee();
    const seen = (async () => { for await (const c of mine) run.chunks.push(c); })();
    let message;
    for await (const m of readUIMessageStream({ stream: reader, message: continued,
        onError: (e) => run.errors.push(e.message) })) message = m;
    await seen;
    run.message = message ? structuredClone(message) : null;
    if (message) {
      if (continued) messages[messages.length - 1] = message; else messages.push(message);
    }
  } catch (e) {
    run.refused = e.message;
  }
  runs.push(run);
}
console.log(JSON.stringify({ runs, messages }));
"""


def chat(url: str, chat_id: str, *ops: dict[str, Any], body: dict[str, Any] | None = None,
         **headers: str) -> dict[str, Any]:
    """The chat's requests, one per op (``{"say": [id, text]}``, ``{"decide": bool}`` to
    answer every approval asked, ``{}`` to send the chat again, ``{"regenerate": True}`` for the
    last reply, ``{"regenerate": N}`` for the reply at index N of the chat's UI messages,
    ``{"output": {TOOL: VALUE}}`` to give the frontend tool calls waiting their output;
    ``body``: what the transport adds to each request's body, ``tools`` for instance),
    each read by the `ai` package: per request its chunks, the UI message the reader built,
    the errors it reported (``refused``: the transport's error for a non-2xx answer)."""
    return run_node(CHAT, url, chat_id, json.dumps(list(ops)), json.dumps(headers),  # type: ignore[no-any-return]
                    json.dumps(body or {}))


def types(run: dict[str, Any]) -> list[str]:
    return [c["type"] for c in run["chunks"]]


def parts(message: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A UI message's parts, shortly: text and reasoning with their text, tools with their
    state and output (or error)."""
    shown: list[tuple[Any, ...]] = []
    for part in message["parts"]:
        kind = part["type"]
        if kind in ("text", "reasoning"):
            shown.append((kind, part["text"]))
        elif kind.startswith("tool-"):
            shown.append((kind, part["state"], part.get("output", part.get("errorText"))))
        else:
            shown.append((kind,))
    return shown
