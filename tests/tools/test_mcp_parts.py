"""What an MCP server's images, audio and embedded files become: parts of the tool message
(API §16, §17), sent to the model as a tool's parts are, and kept by a resumed run."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator

import pytest
from mcp_test_servers import PDF, PNG, WAV

from convo import Audio, Document, Image, MCPServer, OpenAIModel, Runner, Session, Text
from convo._resume import resume
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import OpenAIServer


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def _tree(server: MCPServer) -> LinearTemplate:
    return LinearTemplate([UserTemplate("What is it?"), ToolingTemplate([server])])


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_an_image_reaches_the_model_after_the_tool_results(
        tools_server: MCPServer, model_server: OpenAIServer, mode: str) -> None:
    model_server.add("{picture()}", "A red dot.")
    runner = Runner(OpenAIModel("vision", base_url=model_server.base_url, api_key="test"),
                    _tree(tools_server))
    session = runner.run() if mode == "run" else asyncio.run(runner.arun())
    tool_message = session.messages[2]
    assert (tool_message.role, tool_message.name) == ("tool", "picture")
    assert tool_message.content == (Text("a red dot"), Image(PNG, media_type="image/png"))
    assert not tool_message.metadata.get("error")
    call_id = session.messages[1].tool_calls[0].id
    assert model_server.requests[1]["messages"][2:] == [
        {"role": "tool", "tool_call_id": call_id, "content": "a red dot\n[image: image/png, 60 B]"},
        {"role": "user", "content": [
            {"type": "text", "text": "(returned by the tool picture)"},
            {"type": "image_url", "image_url": {
                "url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}]},
    ]
    assert session.messages[-1].content == "A red dot."


def test_audio_and_embedded_files_become_parts_in_order(tools_server: MCPServer) -> None:
    session = Runner(MockModel(["{media()}", "ok"]), _tree(tools_server)).run()
    assert session.messages[2].content == (
        Text("the files:\nall of them"),
        Audio(WAV, media_type="audio/wav"),
        Document(PDF, media_type="application/pdf", filename="report.pdf"),
        Image(PNG, media_type="image/png", filename="shot.png"),
        Text("some notes\n[resource file:///srv/more.txt]"),
    )


def test_data_that_is_not_base64_is_an_error_result_naming_it(tools_server: MCPServer) -> None:
    session = Runner(MockModel(["{bad_image()}", "ok"]), _tree(tools_server)).run()
    message = session.messages[2]
    assert message.metadata["error"] is True
    assert message.content == (
        "Error: tool 'bad_image' failed: MCPServerError: MCP server 'tools' sent a result of "
        "'bad_image' that cannot be shown: the image (image/png) in the result is not valid "
        "base64 (Only base64 data is allowed)")


def test_a_resumed_run_keeps_the_parts_without_calling_again(tools_server: MCPServer) -> None:
    tools = tools_server.tools()
    first = Runner(MockModel(["{picture()}", "ok"]), _tree(tools_server)).run()
    saved = Session.from_json(first.to_json())  # as a transcript keeps it
    tools_server.close()
    template, session = resume(LinearTemplate([UserTemplate("What is it?"),
                                               ToolingTemplate(tools)]), saved)
    again = Runner(MockModel([]), template).run(session)
    assert again.messages[2].content == (Text("a red dot"), Image(PNG, media_type="image/png"))
    assert tools_server._connection is None  # nothing was started
