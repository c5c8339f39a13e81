"""Parts on the Responses API: the pure converter's input items, and the whole stack
(Runner -> OpenAIModel(api="responses") -> the real openai SDK -> OpenAIServer)."""

from __future__ import annotations

import base64

import pytest
from parts_files import pdf, png, wav

from convo import Audio, Document, Image, Message, ModelError, OpenAIModel, Runner, Text
from convo.models._openai.wire_responses import input_to_wire
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import OpenAIServer

PNG = png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_each_part_as_the_responses_api_takes_it() -> None:
    pdf_bytes = pdf()
    message = Message("user", [
        Text("Compare these."), Image(PNG, media_type="image/png", detail="high"),
        Image(url="https://example.com/cat.jpg"),
        Document(pdf_bytes, media_type="application/pdf", filename="report.pdf"),
        Document(url="https://example.com/r.pdf"),
    ])
    pdf_url = "data:application/pdf;base64," + base64.b64encode(pdf_bytes).decode()
    assert input_to_wire([message]) == [{"role": "user", "content": [
        {"type": "input_text", "text": "Compare these."},
        {"type": "input_image", "image_url": PNG_URL, "detail": "high"},
        {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
        {"type": "input_file", "file_data": pdf_url, "filename": "report.pdf"},
        {"type": "input_file", "file_url": "https://example.com/r.pdf"},
    ]}]


def test_a_tools_image_goes_in_its_output_after_its_text() -> None:
    tool_message = Message("tool", [Text("the chart:"), Image(PNG, media_type="image/png")],
                           tool_call_id="c1", name="chart")
    assert input_to_wire([tool_message]) == [{
        "type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_text", "text": "the chart:"},
            {"type": "input_image", "image_url": PNG_URL, "detail": "auto"}]}]


@pytest.mark.parametrize(("message", "error"), [
    (Message("user", [Text("listen"), Audio(wav(), media_type="audio/wav")]),
     "the Responses API takes no audio input; an Audio part (audio/wav) can go to a model on "
     "the Chat Completions API (api='chat')"),
    (Message("system", [Text("see"), Image(PNG, media_type="image/png")]),
     "the Responses API takes images and files only in user messages; a system message has "
     "a Image part (image/png)"),
])
def test_what_the_responses_api_cannot_carry_is_said_before_sending(message: Message,
                                                                   error: str) -> None:
    with pytest.raises(ModelError) as caught:
        input_to_wire([message])
    assert str(caught.value) == error


def test_an_image_reaches_the_server_through_the_sdk() -> None:
    with OpenAIServer(["A red square."]) as server:
        model = OpenAIModel("vision-model", base_url=server.base_url, api_key="test",
                            api="responses")
        template = LinearTemplate([UserTemplate(["What is this?",
                                                 Image(PNG, media_type="image/png")]),
                                   ToolingTemplate([])])
        session = Runner(model, template).run()
        [body] = server.requests
    assert session.messages[-1].content == "A red square."
    assert server.paths == ["/v1/responses"]
    assert body["input"] == [{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": PNG_URL, "detail": "auto"}]}]
