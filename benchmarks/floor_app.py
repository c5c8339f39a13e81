"""The floor for the serving benchmark: a bare Starlette endpoint that calls the raw ``openai``
SDK and keeps each conversation's history in a dict (no store, no template, no checks).

``uvicorn floor_app:app`` with ``FLOOR_BASE_URL`` set to the fake OpenAI server.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

import openai
from conversation import MODEL, SYSTEM, TOOLS, weather
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# The SDK's default retries, as convo's OpenAIModel has them: under load the fake server may
# drop a connection, which either retries.
client = openai.AsyncOpenAI(base_url=os.environ["FLOOR_BASE_URL"], api_key="x")
histories: dict[str, list[dict[str, Any]]] = {}


async def create(request: Request) -> JSONResponse:
    cid = secrets.token_urlsafe(16)
    histories[cid] = [{"role": "system", "content": SYSTEM}]
    return JSONResponse({"id": cid}, status_code=201)


async def message(request: Request) -> JSONResponse:
    messages = histories[request.path_params["id"]]
    start = len(messages)
    messages.append({"role": "user", "content": (await request.json())["content"]})
    while True:
        reply = (await client.chat.completions.create(model=MODEL, messages=messages,
                                                      tools=TOOLS)).choices[0].message
        calls = reply.tool_calls or []
        messages.append({"role": "assistant", "content": reply.content or "", "tool_calls": [
            {"id": c.id, "type": "function", "function": {
                "name": c.function.name, "arguments": c.function.arguments}} for c in calls]}
            if calls else {"role": "assistant", "content": reply.content})
        if not calls:
            return JSONResponse({"added": messages[start:]})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c.id,
                             "content": weather(**json.loads(c.function.arguments))})


app = Starlette(routes=[Route("/api/conversations", create, methods=["POST"]),
                        Route("/api/conversations/{id}/messages", message, methods=["POST"])])
