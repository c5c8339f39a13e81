"""GeminiModel through the whole stack: Runner -> GeminiModel -> the google-genai SDK -> HTTP
-> GeminiServer. Parallel calls, thought signatures kept and sent back unchanged in place (also
after a resume), parts, a later system message, usage with cached and thoughts tokens, errors
with their retries, and streaming."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from models_kit import check_model_error
from weather_tools import agent

from convo import (
    ContextLengthError,
    Document,
    Image,
    Message,
    ModelError,
    Runner,
    RunStatus,
    Session,
    ToolCall,
)
from convo._parts import Text
from convo._reply import Finish, Usage
from convo.models import GeminiModel
from convo.models._deltas import Deltas
from convo.templates import AssistantTemplate, LinearTemplate, SystemTemplate, UserTemplate
from convo.testing import CutReply, ErrorReply, GeminiServer, RecordingModel, ReplayModel

SIGNATURE = b"\xfb\xef\xbe-signature-A"  # its standard base64 has '+' and '/'
SIG = base64.b64encode(SIGNATURE).decode()
THOUGHT = {"text": "Two cities: call both.", "thought": True}


def decoded(value: str) -> bytes:
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_"))


def both_cities() -> Message:
    """A reply as Gemini 3 sends one: a thought, text, and two calls, the first signed."""
    return Message.assistant(
        "Checking.", [ToolCall("fc_1", "weather", {"city": "Oslo"}),
                      ToolCall("fc_2", "weather", {"city": "Rome"})],
        reasoning=[{"index": 0, "part": THOUGHT},
                   {"index": 2, "part": {"functionCall": {"id": "fc_1", "name": "weather",
                                                          "args": {"city": "Oslo"}},
                                         "thoughtSignature": SIG}}])


def gemini(server: GeminiServer, **kw: Any) -> GeminiModel:
    kw.setdefault("max_retries", 0)
    return GeminiModel("gemini-x", base_url=server.base_url, api_key="k", **kw)


def model_turn(body: dict[str, Any]) -> dict[str, Any]:
    """The first ``model`` turn of a request, signatures decoded to bytes."""
    turn = next(c for c in body["contents"] if c["role"] == "model")
    return {"role": "model", "parts": [
        {**p, "thoughtSignature": decoded(p["thoughtSignature"])} if "thoughtSignature" in p
        else p for p in turn["parts"]]}


SENT_BACK = {"role": "model", "parts": [
    THOUGHT, {"text": "Checking."},
    {"functionCall": {"id": "fc_1", "name": "weather", "args": {"city": "Oslo"}},
     "thoughtSignature": SIGNATURE},
    {"functionCall": {"id": "fc_2", "name": "weather", "args": {"city": "Rome"}}}]}
RESPONSES = {"role": "user", "parts": [
    {"functionResponse": {"id": "fc_1", "name": "weather",
                          "response": {"output": "Sunny in Oslo"}}},
    {"functionResponse": {"id": "fc_2", "name": "weather",
                          "response": {"output": "Sunny in Rome"}}}]}


@pytest.mark.parametrize(("stream", "asynchronous"),
                         [(False, False), (True, False), (False, True), (True, True)])
def test_parallel_calls_with_signatures_sent_back_unchanged_in_place(
        gemini_server: GeminiServer, stream: bool, asynchronous: bool) -> None:
    gemini_server.add(both_cities(), "Both sunny.")
    with gemini(gemini_server, stream=stream) as model:
        runner = Runner(model, agent("Oslo and Rome?"))
        session = asyncio.run(runner.arun()) if asynchronous else runner.run()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool",
                                                  "tool", "assistant"]
    reply = session.messages[2]
    assert reply.finish is Finish.TOOL_CALLS
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [("fc_1", {"city": "Oslo"}),
                                                              ("fc_2", {"city": "Rome"})]
    signed = [item for item in reply.reasoning if "thoughtSignature" in item["part"]]
    assert [decoded(item["part"]["thoughtSignature"]) for item in signed] == [SIGNATURE]
    first, second = gemini_server.requests
    assert first["systemInstruction"]["parts"] == [{"text": "You are an agent."}]
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "weather"
    assert second["contents"][0] == {"role": "user", "parts": [{"text": "Oslo and Rome?"}]}
    sent = model_turn(second)
    if stream:  # the thought came in pieces, each its own part, each sent back
        thought = [p for p in sent["parts"] if p.get("thought")]
        assert "".join(p["text"] for p in thought) == THOUGHT["text"]
        sent["parts"] = [THOUGHT] + [p for p in sent["parts"] if not p.get("thought")]
    assert sent == SENT_BACK
    assert second["contents"][2] == RESPONSES
    method = "streamGenerateContent" if stream else "generateContent"
    assert gemini_server.paths == [f"/v1/models/gemini-x:{method}"] * 2


def test_a_resumed_conversation_sends_its_signatures_in_place(gemini_server: GeminiServer
                                                             ) -> None:
    gemini_server.add(both_cities(), "Both sunny.", "You are welcome.")
    with gemini(gemini_server) as model:
        first = Runner(model, agent("Oslo and Rome?")).run()
        saved = Session.from_json(first.to_json())
        more = LinearTemplate([UserTemplate("Thanks!"), AssistantTemplate()])
        Runner(model, more).run(saved)
    third = gemini_server.requests[2]
    assert model_turn(third) == SENT_BACK
    assert third["contents"][2] == RESPONSES
    assert third["contents"][-1] == {"role": "user", "parts": [{"text": "Thanks!"}]}


def test_recorded_and_replayed_with_the_signatures(gemini_server: GeminiServer,
                                                  tmp_path: Path) -> None:
    gemini_server.add(both_cities(), "Both sunny.")
    path = tmp_path / "oslo.json"
    with gemini(gemini_server) as model:
        recorded = Runner(RecordingModel(model, path), agent("Oslo and Rome?")).run()
    replayed = Runner(ReplayModel(path), agent("Oslo and Rome?")).run()
    assert replayed.messages == recorded.messages
    assert replayed.messages[2].reasoning == recorded.messages[2].reasoning
    assert [decoded(i["part"]["thoughtSignature"]) for i in replayed.messages[2].reasoning
            if "thoughtSignature" in i["part"]] == [SIGNATURE]


def test_a_signed_text_part_goes_back_on_the_text(gemini_server: GeminiServer) -> None:
    gemini_server.add(Message.assistant("Hello!", reasoning=[
        {"index": 0, "part": {"text": "Hello!", "thoughtSignature": SIG}}]), "Fine.")
    with gemini(gemini_server) as model:
        reply = model.complete([Message("user", "Hi")])
        model.complete([Message("user", "Hi"), reply, Message("user", "How are you?")])
    assert model_turn(gemini_server.requests[1]) == {"role": "model", "parts": [
        {"text": "Hello!", "thoughtSignature": SIGNATURE}]}


def test_calls_without_ids_get_made_up_ones_never_sent_back(gemini_server: GeminiServer
                                                            ) -> None:
    gemini_server.add(Message.assistant("", [ToolCall("", "weather", {"city": "Oslo"})]),
                      "Sunny.")
    with gemini(gemini_server) as model:
        session = Runner(model, agent("Oslo and Rome?")).run()
    call = session.messages[2].tool_calls[0]
    assert call.id.startswith("gemini_") and session.messages[3].tool_call_id == call.id
    second = gemini_server.requests[1]["contents"]
    assert second[1] == {"role": "model", "parts": [
        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}]}
    assert second[2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "weather", "response": {"output": "Sunny in Oslo"}}}]}


def test_another_providers_reasoning_and_ids_are_left_out(gemini_server: GeminiServer) -> None:
    gemini_server.add("Fine.")
    history = [Message("user", "Hi"),
               Message.assistant("Hello", [ToolCall("toolu_1", "weather", {"city": "Oslo"})],
                                 reasoning=[{"type": "thinking", "thinking": "x",
                                             "signature": "s"}]),
               Message("tool", "Sunny", tool_call_id="toolu_1", metadata={"error": "boom"}),
               Message("user", "Again")]
    with gemini(gemini_server) as model:
        model.complete(history)
    assert gemini_server.requests[0]["contents"][1:3] == [
        {"role": "model", "parts": [{"text": "Hello"}, {"functionCall": {
            "name": "weather", "args": {"city": "Oslo"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"error": "Sunny"}}},
            {"text": "Again"}]}]


def test_images_a_pdf_and_a_later_system_message(gemini_server: GeminiServer) -> None:
    gemini_server.add("A chart and a report.")
    history = [Message("system", "Describe."), Message("user", "Hi"),
               Message("assistant", "Hello"), Message("system", "Be short."),
               Message("user", (Text("What are these?"),
                                Image(b"\x89PNG\xfb\xff", media_type="image/png"),
                                Image(url="https://example.com/a.jpg", media_type="image/jpeg"),
                                Document(b"%PDF-1.7", media_type="application/pdf",
                                         filename="report.pdf")))]
    with gemini(gemini_server) as model:
        reply = model.complete(history)
    assert reply.text == "A chart and a report."
    body = gemini_server.requests[0]
    assert body["systemInstruction"]["parts"] == [{"text": "Describe."}]
    assert body["contents"][-1] == {"role": "user", "parts": [
        {"text": "<system>Be short.</system>"},
        {"text": "What are these?"},
        {"inlineData": {"data": base64.urlsafe_b64encode(b"\x89PNG\xfb\xff").decode(),
                        "mime_type": "image/png"}},
        {"fileData": {"file_uri": "https://example.com/a.jpg", "mime_type": "image/jpeg"}},
        {"inlineData": {"data": base64.urlsafe_b64encode(b"%PDF-1.7").decode(),
                        "mime_type": "application/pdf"}}]}


def test_a_later_system_message_follows_the_function_responses(gemini_server: GeminiServer
                                                               ) -> None:
    gemini_server.add("Done.")
    history = [Message("user", "Oslo?"),
               Message.assistant("", [ToolCall("c1", "weather", {"city": "Oslo"})]),
               Message("system", "Answer in one word."),
               Message("tool", "Sunny", tool_call_id="c1")]
    with gemini(gemini_server) as model:
        model.complete(history)
    assert gemini_server.requests[0]["contents"][-1]["parts"] == [
        {"functionResponse": {"name": "weather", "response": {"output": "Sunny"}}},
        {"text": "<system>Answer in one word.</system>"}]


def test_usage_with_cached_and_thoughts_tokens(gemini_server: GeminiServer) -> None:
    gemini_server.add(Message.assistant("Hi.", usage=Usage(100, 30, 130, cache_read_tokens=60,
                                                           reasoning_tokens=20)),
                      Message.assistant("Again.", usage=Usage(50, 5, 55)))
    with gemini(gemini_server) as model:
        session = Runner(model, LinearTemplate([UserTemplate("Hi"), AssistantTemplate(),
                                                UserTemplate("More"),
                                                AssistantTemplate()])).run()
    first = session.messages[1].usage
    assert first == Usage(100, 30, 130, cache_read_tokens=60, reasoning_tokens=20)
    assert session.outcome is not None
    assert session.outcome.usage == Usage(150, 35, 185, cache_read_tokens=60,
                                          reasoning_tokens=20)


@pytest.mark.parametrize("stream", [False, True])
def test_streamed_text_and_thoughts_reach_their_callbacks(gemini_server: GeminiServer,
                                                          stream: bool) -> None:
    gemini_server.add(Message.assistant("It is sunny in Oslo today.",
                                        reasoning=[{"index": 0, "part": THOUGHT}]))
    texts: list[str] = []
    thoughts: list[str] = []
    with gemini(gemini_server, stream=stream,
                thinking={"include_thoughts": True, "thinking_budget": 512}) as model:
        reply = model.complete([Message("user", "Oslo?")],
                               on_delta=Deltas(texts.append, thoughts.append))
    assert reply.text == "It is sunny in Oslo today."
    assert gemini_server.requests[0]["generationConfig"]["thinkingConfig"] == {
        "include_thoughts": True, "thinking_budget": 512}  # the SDK's wire, as it is
    if stream:
        assert "".join(thoughts) == THOUGHT["text"] and len(thoughts) == 3
        assert "".join(texts) == reply.text and len(texts) == 4
    else:
        assert texts == [] and thoughts == []


def test_max_tokens_is_a_truncated_reply_and_safety_a_refusal(gemini_server: GeminiServer
                                                              ) -> None:
    gemini_server.add(Message.assistant("Once upon", finish=Finish.LENGTH),
                      Message.assistant("", refusal="refused"))
    with gemini(gemini_server, max_tokens=5, temperature=0.5) as model:
        cut = model.complete([Message("user", "A story?")])
        refused = model.complete([Message("user", "Something bad")])
    assert (cut.text, cut.finish) == ("Once upon", Finish.LENGTH)
    assert (refused.finish, refused.refusal) == (Finish.REFUSED, "refused")
    assert gemini_server.requests[0]["generationConfig"] == {"maxOutputTokens": 5,
                                                            "temperature": 0.5}


@pytest.mark.parametrize("stream", [False, True])
def test_a_429_and_a_503_are_tried_again(gemini_server: GeminiServer, stream: bool) -> None:
    gemini_server.add(ErrorReply(429, {"Retry-After": "0"}),
                      ErrorReply(503, {"Retry-After": "0"}), "At last.")
    with gemini(gemini_server, max_retries=2, stream=stream) as model:
        assert model.complete([Message("user", "Hi")]).text == "At last."
    assert gemini_server.received == 3


def test_retries_run_out_and_say_so(gemini_server: GeminiServer) -> None:
    gemini_server.add(*(ErrorReply(500, {"Retry-After": "0"}) for _ in range(3)))
    with gemini(gemini_server, max_retries=2) as model, \
            pytest.raises(ModelError, match="The server failed after 2 retries: try again"):
        asyncio.run(model.acomplete([Message("user", "Hi")]))
    assert gemini_server.received == 3


@pytest.mark.parametrize(("reply", "error", "said"), [
    (ErrorReply(400), ModelError, "HTTP 400 (INVALID_ARGUMENT) from"),
    (ErrorReply(401), ModelError,
     "Check the API key (api_key=, GEMINI_API_KEY or GOOGLE_API_KEY) and its permissions"),
    (ErrorReply(404), ModelError, "Check the model name ('gemini-x') and the base URL"),
    (ErrorReply(429), ModelError, "HTTP 429 (RESOURCE_EXHAUSTED) from"),
    (ErrorReply(500), ModelError, "HTTP 500 (INTERNAL) from"),
    (ErrorReply(503), ModelError, "The server failed with retries off: try again"),
    (ErrorReply(400, body={"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "The input token count (1200000) exceeds the maximum number of tokens "
                   "allowed (1048576)."}}),
     ContextLengthError, "exceeds the maximum number of tokens allowed (1048576)."),
])
def test_http_errors_are_model_errors(gemini_server: GeminiServer, reply: ErrorReply,
                                      error: type[Exception], said: str) -> None:
    gemini_server.add(reply)
    check_model_error(gemini(gemini_server), error, said,
                      f"from {gemini_server.base_url} (model 'gemini-x')")
    assert gemini_server.received == 1  # retries off: tried once


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_off_or_not_json_is_a_model_error(gemini_server: GeminiServer,
                                                      stream: bool) -> None:
    gemini_server.add(CutReply("It is sunny in Oslo today, and warm.", 2),
                      ErrorReply(200, body="{not json"))
    with gemini(gemini_server, stream=stream) as model:
        with pytest.raises(ModelError, match=r"no complete reply: the connection to "
                                             rf"{gemini_server.base_url} \(model 'gemini-x'\) "
                                             r"broke before the reply was complete"):
            model.complete([Message("user", "Hi")])
        with pytest.raises(ModelError, match=rf"malformed reply from {gemini_server.base_url} "
                                             r"\(model 'gemini-x'\): "):
            model.complete([Message("user", "Hi")])


def test_a_server_that_is_not_there_is_a_model_error() -> None:
    with GeminiServer() as server:
        url = server.base_url
    with GeminiModel("gemini-x", base_url=url, api_key="k", max_retries=0) as model, \
            pytest.raises(ModelError, match=f"no HTTP status: could not reach {url} "):
        model.complete([Message("user", "Hi")])


def test_no_key_and_no_base_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ModelError, match=r"GeminiModel has no API key: set GEMINI_API_KEY \(or "
                                         r"GOOGLE_API_KEY\) or pass api_key="):
        GeminiModel().complete([Message("user", "Hi")])


def test_the_key_comes_from_the_environment(gemini_server: GeminiServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-env")
    gemini_server.add("Hello.", "Again.")
    with GeminiModel("gemini-x", base_url=gemini_server.base_url) as model:
        assert model.complete([Message("user", "Hi")]).text == "Hello."
        monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-env")
    with GeminiModel("gemini-x", base_url=gemini_server.base_url) as model:
        assert model.complete([Message("user", "Hi")]).text == "Again."
    assert gemini_server.keys == ["from-google-env", "from-gemini-env"]


def test_an_injected_client_serves_sync_and_async(gemini_server: GeminiServer) -> None:
    from google import genai

    gemini_server.add("One.", "Two.")
    client = genai.Client(api_key="mine", http_options={"base_url": gemini_server.base_url})
    model = GeminiModel("gemini-x", client=client)

    async def asked() -> Message:
        reply = await model.acomplete([Message("user", "Hi")])
        await model.aclose()  # an injected client is left open: its owner closes it
        assert not client.aio._api_client._async_httpx_client.is_closed
        await client.aio.aclose()
        return reply

    assert model.complete([Message("user", "Hi")]).text == "One."
    assert asyncio.run(asked()).text == "Two."
    model.close()
    assert not client._api_client._httpx_client.is_closed
    assert gemini_server.keys == ["mine", "mine"]
    client.close()


def test_extra_settings_go_into_the_config_and_unknown_ones_are_refused(
        gemini_server: GeminiServer) -> None:
    gemini_server.add("Hi.")
    with gemini(gemini_server, top_k=3, stop_sequences=["END"]) as model:
        model.complete([Message("user", "Hi")])
    assert gemini_server.requests[0]["generationConfig"] == {"topK": 3.0,
                                                            "stopSequences": ["END"]}
    with pytest.raises(TypeError, match="GeminiModel: top_q is not a setting of the request's "
                                        "config"):
        GeminiModel(top_q=3)


def test_geminis_kept_parts_are_left_out_by_the_other_providers() -> None:
    from convo.models._anthropic.wire import messages_to_wire
    from convo.models._openai.wire_responses import input_to_wire

    history = [Message("user", "Oslo and Rome?"), both_cities()]
    _, turns = messages_to_wire(history)
    assert turns[1]["content"][0] == {"type": "text", "text": "Checking."}
    assert [item.get("type") for item in input_to_wire(history)] == [
        None, None, "function_call", "function_call"]


# -- a conversation with no user message yet ---------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_a_bot_that_speaks_first_sends_its_system_messages_as_the_user_turn(
        gemini_server: GeminiServer, stream: bool) -> None:
    gemini_server.add("Hello! How can I help?")
    template = LinearTemplate([SystemTemplate("You are a barista."),
                               SystemTemplate("Greet the customer."), AssistantTemplate()])
    with gemini(gemini_server, stream=stream) as model:
        session = Runner(model, template).run()
    assert session.messages[-1].text == "Hello! How can I help?"
    request = gemini_server.requests[0]
    assert request["contents"] == [{"role": "user", "parts": [
        {"text": "You are a barista.\n\nGreet the customer."}]}]
    assert "systemInstruction" not in request


def test_an_empty_conversation_is_a_model_error_before_any_request(gemini_server: GeminiServer
                                                                   ) -> None:
    with gemini(gemini_server) as model, pytest.raises(ModelError) as caught:
        model.complete([])
    assert str(caught.value) == ("the Gemini API needs at least one message; the conversation "
                                 "is empty: start it with a system or user message")
    assert gemini_server.received == 0
