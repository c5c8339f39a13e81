"""Typed output: ``output_type=`` makes a turn end with a validated object, ``turn.output``,
through the final-output tool (or a reply that is JSON of the type); invalid output is fed
back within the turn's budget; the output is stored in the transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from convo import (
    DefinitionError,
    Message,
    OpenAIModel,
    Runner,
    RunStatus,
    Session,
    ToolCall,
    ToolDefinitionError,
    TurnResult,
)
from convo._transcript import TranscriptWriter, load_transcript
from convo.models import MockModel
from convo.templates import AssistantTemplate, LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import OpenAIServer
from convo.tools import tool
from convo.tools._output import OUTPUT_MESSAGE


class Forecast(BaseModel):
    city: str
    degrees: int = Field(description="Degrees Celsius")
    sunny: bool = True


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 21 degrees in {city}"


def _run(template: ToolingTemplate | AssistantTemplate, replies: list[str]) -> Session:
    model = MockModel(replies)
    session = Runner(model, LinearTemplate([UserTemplate("Weather in Oslo?"), template])).run()
    model.assert_complete()
    return session


FINAL_RESULT = {
    "type": "function",
    "function": {
        "name": "final_result",
        "description": "Give your final answer. Call this once, when the answer is ready: its "
                       "arguments are your result.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "degrees": {"type": "integer", "description": "Degrees Celsius"},
                "sunny": {"type": "boolean", "default": True},
            },
            "required": ["city", "degrees"],
            "additionalProperties": False,
        },
    },
}


def test_the_turn_ends_with_the_validated_object() -> None:
    template = ToolingTemplate([weather], output_type=Forecast)
    assert template._schemas == (weather.schema(), FINAL_RESULT)
    session = _run(template, ["{weather(city='Oslo')}",
                              "{final_result(city='Oslo', degrees=21)}"])
    turn = session.turns[-1]
    assert turn == TurnResult(status=RunStatus.COMPLETED, response='{"city":"Oslo","degrees":21,'
                              '"sunny":true}', terminated_by="final_result", iterations=2,
                              done=True, output=Forecast(city="Oslo", degrees=21))
    assert session.messages[-1] == Message("tool", "Final result received.",  # no tool ran
                                           tool_call_id="call_2", name="final_result",
                                           metadata={"not_run": True})
    assert session.outcome is not None and session.outcome.turn is turn


def test_invalid_output_is_fed_back_and_text_is_asked_to_use_the_tool() -> None:
    session = _run(ToolingTemplate([], output_type=Forecast), [
        "It is sunny.",
        "{final_result(city='Oslo', degrees='warm')}",
        "{final_result(city='Oslo')}",
        "{final_result(city='Oslo', degrees=21, sunny=False)}",
    ])
    assert [(m.role, m.content) for m in session.messages[1:]] == [
        ("assistant", "It is sunny."),
        ("system", OUTPUT_MESSAGE),
        ("assistant", ""),
        ("tool", "Error: tool 'final_result' argument 'degrees' must be integer, got string "
                 "'warm'"),
        ("assistant", ""),
        ("tool", "Error: tool 'final_result' is missing required argument 'degrees' (integer); "
                 "it takes city (string), degrees (integer), sunny (boolean)"),
        ("assistant", ""),
        ("tool", "Final result received."),
    ]
    turn = session.turns[-1]
    assert (turn.status, turn.iterations, turn.injections) == (RunStatus.COMPLETED, 4, 1)
    assert turn.output == Forecast(city="Oslo", degrees=21, sunny=False)


def test_the_budget_is_the_turns_max_iterations() -> None:
    session = _run(ToolingTemplate([], output_type=Forecast, max_iterations=2), [
        "{final_result(city=1, degrees=1)}", "{final_result(city=2, degrees=2)}"])
    turn = session.turns[-1]
    assert (turn.status, turn.iterations, turn.output) == (RunStatus.MAX_ITERATIONS, 2, None)


def test_a_reply_that_is_json_of_the_type_is_the_output() -> None:
    session = _run(ToolingTemplate([], output_type=Forecast), ['{"city": "Oslo", "degrees": 3}'])
    assert session.turns[-1].output == Forecast(city="Oslo", degrees=3)
    assert session.turns[-1].terminated_by is None


def test_other_types_are_wrapped_as_result() -> None:
    session = _run(AssistantTemplate(output_type=list[int]), ["{final_result(result=[1, 2])}"])
    assert session.turns[-1].output == [1, 2]
    assert session.turns[-1].response == "[1,2]"


def test_assistant_template_with_output_type() -> None:
    session = _run(AssistantTemplate(output_type=Forecast),
                   ["{final_result(city='Oslo', degrees=5)}"])
    assert session.turns[-1].output == Forecast(city="Oslo", degrees=5)
    with pytest.raises(DefinitionError) as info:
        AssistantTemplate("Hi", output_type=Forecast)
    assert str(info.value) == ("AssistantTemplate: give content (a scripted message) or "
                               "output_type (a model's typed answer), not both")


def test_a_tool_named_final_result_clashes() -> None:
    @tool
    def final_result(x: int) -> int:
        """Mine."""
        return x

    with pytest.raises(ToolDefinitionError) as info:
        ToolingTemplate([final_result], output_type=Forecast)
    assert str(info.value) == ("ToolingTemplate: a tool is named 'final_result', the name of "
                               "the final-output tool of output_type")


def test_the_output_is_stored_in_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    try:
        Runner(MockModel(["{final_result(city='Oslo', degrees=21)}"]),
               ToolingTemplate([], output_type=Forecast), on_event=writer).run(session)
    finally:
        writer.close()
    turn = load_transcript(path).turns[-1]
    assert turn.output == {"city": "Oslo", "degrees": 21, "sunny": True}
    assert Forecast.model_validate(turn.output) == session.turns[-1].output
    assert TurnResult.from_dict(session.turns[-1].to_dict()).output == turn.output
    assert "output" not in TurnResult(status=RunStatus.COMPLETED).to_dict()


def test_typed_output_through_the_openai_sdk_and_the_fake_server() -> None:
    with OpenAIServer() as server:
        server.add("{final_result(city='Oslo', degrees='hot')}",
                   Message("assistant", "", tool_calls=(
                       ToolCall("c2", "final_result", {"city": "Oslo", "degrees": 22}),)))
        with OpenAIModel("test-model", base_url=server.base_url, api_key="test",
                         max_retries=0) as model:
            session = Runner(model, LinearTemplate([
                UserTemplate("Weather?"), ToolingTemplate([weather], output_type=Forecast),
            ])).run()
        assert [t["function"]["name"] for t in server.requests[0]["tools"]] == [
            "weather", "final_result"]
        assert server.requests[0]["tools"][1] == FINAL_RESULT
        fed_back = server.requests[1]["messages"][-1]
        assert fed_back["role"] == "tool"
        assert fed_back["content"] == ("Error: tool 'final_result' argument 'degrees' must be "
                                       "integer, got string 'hot'")
    assert session.turns[-1].output == Forecast(city="Oslo", degrees=22)
    assert json.loads(session.turns[-1].response or "") == {"city": "Oslo", "degrees": 22,
                                                            "sunny": True}


def test_a_resumed_turn_has_its_output_object_again(tmp_path: Path) -> None:
    from convo import LoopTemplate, ScriptedInterface
    from convo._resume import resume

    chat = LoopTemplate([UserTemplate(), ToolingTemplate([weather], output_type=Forecast)])
    path = tmp_path / "t.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    try:
        Runner(MockModel(["{weather(city='Oslo')}", "{final_result(city='Oslo', degrees=21)}"]),
               chat, ScriptedInterface(["Oslo?"]), on_event=writer).run(session)
    finally:
        writer.close()
    resumed, again = resume(chat, load_transcript(path))
    model = MockModel(['{"city": "Bergen", "degrees": 12}'])
    Runner(model, resumed, ScriptedInterface(["Bergen?"])).run(again)
    model.assert_complete()
    # Replaying validates the saved final_result call again: the object, not plain data.
    assert [t.output for t in again.turns] == [Forecast(city="Oslo", degrees=21),
                                               Forecast(city="Bergen", degrees=12)]
