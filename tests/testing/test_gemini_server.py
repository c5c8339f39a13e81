"""GeminiServer, with the real ``google-genai`` SDK as its client: replies plain and streamed,
function calls (parallel, with ids), thought signatures and thought parts, usage, errors as
the SDK's own exceptions; the bodies the SDK sends and the server answers checked with the
SDK's own pydantic types."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from convo import Message
from convo._messages import ToolCall
from convo._reply import Finish, Usage
from convo.testing import ErrorReply, GeminiServer

# Bytes whose standard base64 has '+' and '/': the SDK writes them URL-safe ('-', '_').
SIGNATURE = b"\xfb\xef\xbe-sig"
SIG_STANDARD = base64.b64encode(SIGNATURE).decode()
LOOKUP = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="lookup", parameters_json_schema={"type": "object",
                                           "properties": {"city": {"type": "string"}}})])


def _client(server: GeminiServer) -> genai.Client:
    return genai.Client(api_key="test", http_options=types.HttpOptions(base_url=server.base_url))


def _signed_reply() -> Message:
    return Message.assistant(
        "Let me look.", [ToolCall("fc_1", "lookup", {"city": "Oslo"}),
                         ToolCall("fc_2", "lookup", {"city": "Rome"})],
        reasoning=[{"index": 0, "part": {"text": "Two cities.", "thought": True}},
                   {"index": 2, "part": {"functionCall": {"name": "lookup",
                                                          "args": {"city": "Oslo"}},
                                         "thoughtSignature": SIG_STANDARD}}])


def _check_request(body: dict[str, Any]) -> None:
    """Every field of a request body is one the SDK's own types know (they forbid others)."""
    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    if "systemInstruction" in body:
        types.Content.model_validate_json(json.dumps(body["systemInstruction"]))
    for tool in body.get("tools", ()):
        types.Tool.model_validate_json(json.dumps(tool))
    types.GenerationConfig.model_validate_json(json.dumps(body.get("generationConfig", {})))


def test_text_and_parallel_function_calls_read_by_the_sdk(gemini_server: GeminiServer) -> None:
    gemini_server.add("Let me look. {lookup(city='Oslo')} {lookup(city='Rome')}", "Sunny.")
    with _client(gemini_server) as client:
        first = client.models.generate_content(
            model="gemini-x", contents="Weather in Oslo and Rome?",
            config=types.GenerateContentConfig(tools=[LOOKUP], system_instruction="Be brief."))
        second = client.models.generate_content(model="gemini-x", contents="And now?")
    assert first.text is None or first.text.startswith("Let me look.")
    calls = first.function_calls or []
    assert [(c.id, c.name, c.args) for c in calls] == [
        ("call_1", "lookup", {"city": "Oslo"}), ("call_2", "lookup", {"city": "Rome"})]
    assert first.candidates is not None
    assert first.candidates[0].finish_reason == types.FinishReason.STOP
    assert second.text == "Sunny."
    assert first.usage_metadata is not None
    assert first.usage_metadata.candidates_token_count == 3 + 2 + 2  # words, two calls of one
    body = gemini_server.requests[0]
    assert body["contents"] == [{"parts": [{"text": "Weather in Oslo and Rome?"}],
                                 "role": "user"}]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "lookup"
    for sent in gemini_server.requests:
        _check_request(sent)
    assert gemini_server.paths == ["/v1/models/gemini-x:generateContent"] * 2
    assert gemini_server.keys == ["test", "test"]


def test_thought_signatures_and_thoughts_read_by_the_sdk(gemini_server: GeminiServer) -> None:
    gemini_server.add(_signed_reply())
    with _client(gemini_server) as client:
        reply = client.models.generate_content(model="gemini-x", contents="Oslo and Rome?")
    assert reply.candidates is not None and reply.candidates[0].content is not None
    parts = reply.candidates[0].content.parts or []
    assert [(p.thought, p.text) for p in parts[:2]] == [(True, "Two cities."),
                                                       (None, "Let me look.")]
    assert parts[2].function_call is not None and parts[2].function_call.id == "fc_1"
    assert parts[2].thought_signature == SIGNATURE  # the standard alphabet, read as bytes
    assert parts[3].thought_signature is None


@pytest.mark.parametrize("asynchronous", [False, True])
def test_streamed_chunks_read_by_the_sdk(gemini_server: GeminiServer, asynchronous: bool
                                         ) -> None:
    gemini_server.add(_signed_reply())

    async def chunks_async(client: genai.Client) -> list[types.GenerateContentResponse]:
        stream = await client.aio.models.generate_content_stream(model="gemini-x",
                                                                 contents="Oslo?")
        got = [chunk async for chunk in stream]
        await client.aio.aclose()
        return got

    with _client(gemini_server) as client:
        if asynchronous:
            chunks = asyncio.run(chunks_async(client))
        else:
            chunks = list(client.models.generate_content_stream(model="gemini-x",
                                                                contents="Oslo?"))
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])  # type: ignore[index, union-attr]
             if c.candidates]
    assert "".join(p.text or "" for p in parts if p.thought) == "Two cities."
    assert "".join(p.text or "" for p in parts if p.text and not p.thought) == "Let me look."
    calls = [p for p in parts if p.function_call is not None]
    assert [(p.function_call.args, p.thought_signature) for p in calls] == [  # type: ignore[union-attr]
        ({"city": "Oslo"}, SIGNATURE), ({"city": "Rome"}, None)]
    assert len(chunks) == len(parts) > 4  # text in pieces of 8 characters, each call whole
    last = chunks[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None and last.usage_metadata.thoughts_token_count == 2
    assert gemini_server.paths == ["/v1/models/gemini-x:streamGenerateContent"]


def test_the_servers_own_json_is_the_sdks_response_type(gemini_server: GeminiServer) -> None:
    gemini_server.add(_signed_reply(), _signed_reply())
    url = f"{gemini_server.base_url}/v1beta/models/gemini-x"
    ask = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    with httpx.Client() as http:
        plain = http.post(f"{url}:generateContent?key=k", json=ask)
        streamed = http.post(f"{url}:streamGenerateContent?alt=sse",
                             headers={"x-goog-api-key": "k2"}, json=ask)
    types.GenerateContentResponse.model_validate_json(plain.content)
    events = [line[len("data: "):] for line in streamed.text.split("\r\n")
              if line.startswith("data: ")]
    for event in events:
        types.GenerateContentResponse.model_validate_json(event)
    assert gemini_server.keys == ["k", "k2"]
    assert streamed.headers["content-type"] == "text/event-stream"


def test_usage_scripted_on_a_reply_is_served(gemini_server: GeminiServer) -> None:
    gemini_server.add(Message.assistant("Hi.", usage=Usage(100, 30, 130, cache_read_tokens=60,
                                                           reasoning_tokens=20)))
    with _client(gemini_server) as client:
        reply = client.models.generate_content(model="gemini-x", contents="Hi")
    usage = reply.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.thoughts_token_count,
            usage.cached_content_token_count, usage.total_token_count) == (100, 10, 20, 60, 130)


def test_a_truncated_and_a_refused_reply(gemini_server: GeminiServer) -> None:
    gemini_server.add(Message.assistant("Once upon", finish=Finish.LENGTH),
                      Message.assistant("", refusal="refused"))
    with _client(gemini_server) as client:
        cut = client.models.generate_content(model="gemini-x", contents="A story?")
        refused = client.models.generate_content(model="gemini-x", contents="Bad")
    assert cut.candidates is not None and refused.candidates is not None
    assert cut.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert refused.candidates[0].finish_reason == types.FinishReason.SAFETY


@pytest.mark.parametrize(("status", "word", "kind"), [
    (400, "INVALID_ARGUMENT", errors.ClientError), (401, "UNAUTHENTICATED", errors.ClientError),
    (404, "NOT_FOUND", errors.ClientError), (429, "RESOURCE_EXHAUSTED", errors.ClientError),
    (500, "INTERNAL", errors.ServerError), (503, "UNAVAILABLE", errors.ServerError),
])
def test_errors_are_the_sdks_own_exceptions(gemini_server: GeminiServer, status: int,
                                            word: str, kind: type[Exception]) -> None:
    gemini_server.add(ErrorReply(status))
    with _client(gemini_server) as client, pytest.raises(kind) as info:
        client.models.generate_content(model="gemini-x", contents="Hi")
    error = info.value
    assert isinstance(error, errors.APIError)
    assert (error.code, error.status) == (status, word)
    assert error.message == f"GeminiServer: scripted HTTP {status} " + {
        400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
        500: "Internal Server Error", 503: "Service Unavailable"}[status]


def test_requests_without_a_key_or_with_broken_base64_are_refused(gemini_server: GeminiServer
                                                                  ) -> None:
    url = f"{gemini_server.base_url}/v1beta/models/gemini-x:generateContent"
    broken = {"contents": [{"role": "user", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": "not base64!"}}]}]}
    with httpx.Client() as http:
        keyless = http.post(url, json={"contents": []})
        bad = http.post(url, headers={"x-goog-api-key": "k"}, json=broken)
        wrong = http.post(f"{gemini_server.base_url}/v1/chat/completions", json={})
    assert keyless.status_code == 401 and keyless.json()["error"]["status"] == "UNAUTHENTICATED"
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == ("GeminiServer: contents[0].parts[0]."
                                              "inlineData.data is not base64")
    assert wrong.status_code == 404
    assert gemini_server.received == 0  # none of them reached the script


def test_inline_bytes_sent_by_the_sdk_url_safe_are_read(gemini_server: GeminiServer) -> None:
    gemini_server.add("A picture.")
    with _client(gemini_server) as client:
        client.models.generate_content(model="gemini-x", contents=[types.Content(
            role="user", parts=[types.Part.from_bytes(data=SIGNATURE, mime_type="image/png")])])
    sent = gemini_server.requests[0]["contents"][0]["parts"][0]["inlineData"]
    # on the wire the SDK mixes snake_case and camelCase
    assert sent == {"data": base64.urlsafe_b64encode(SIGNATURE).decode(),
                    "mime_type": "image/png"}
    _check_request(gemini_server.requests[0])


@pytest.mark.parametrize("body", [{"contents": []}, {}])
def test_a_request_with_no_contents_is_refused_as_the_api_does(gemini_server: GeminiServer,
                                                               body: dict[str, Any]) -> None:
    # (The google-genai SDK refuses empty contents itself, before sending: another client.)
    url = f"{gemini_server.base_url}/v1beta/models/gemini-x:generateContent"
    with httpx.Client() as http:
        refused = http.post(url, headers={"x-goog-api-key": "k"}, json=body)
    assert refused.status_code == 400
    assert refused.json() == {"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "* GenerateContentRequest.contents: contents is not specified\n"}}
    assert gemini_server.received == 0
