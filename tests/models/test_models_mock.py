"""MockModel, FunctionModel, EchoModel and the Model protocol (API.md §5)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from convo import Message, Runner, RunStatus, ScriptedInterface, ScriptError, Session, ToolCall
from convo._errors import ModelError
from convo.models import EchoModel, FunctionModel, MockModel, Model
from convo.models._base import ToolSchemas
from convo.templates import AssistantTemplate, LinearTemplate, LoopTemplate, UserTemplate

SCHEMA = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


def test_mock_model_replies_in_order() -> None:
    model = MockModel(["one", "two"])
    assert model.complete([Message("user", "a")]) == Message("assistant", "one")
    assert model.complete([Message("user", "b")]) == Message("assistant", "two")
    model.assert_complete()


def test_a_single_string_is_one_reply() -> None:
    model = MockModel("only")
    assert model.complete([]) == Message("assistant", "only")
    model.assert_complete()


def test_inline_tool_call_syntax() -> None:
    model = MockModel(["Let me look. {search(query='cats', limit=2)} One moment."])
    reply = model.complete([])
    assert reply == Message("assistant", "Let me look. One moment.",
                            tool_calls=(ToolCall("call_1", "search",
                                                 {"query": "cats", "limit": 2}),))


def test_several_inline_calls_get_distinct_ids_across_replies() -> None:
    model = MockModel(["{add(a=1, b=2)}{add(a=3, b=4)}", "{lookup(key=[1, {'x': None}])} done"])
    first, second = model.complete([]), model.complete([])
    assert first.content == ""
    assert first.tool_calls == (ToolCall("call_1", "add", {"a": 1, "b": 2}),
                                ToolCall("call_2", "add", {"a": 3, "b": 4}))
    assert second == Message("assistant", "done",
                             tool_calls=(ToolCall("call_3", "lookup", {"key": [1, {"x": None}]}),))


def test_a_positional_string_becomes_raw_arguments() -> None:
    reply = MockModel(["{finish_task('all done')}"]).complete([])
    assert reply.tool_calls == (ToolCall("call_1", "finish_task", {}, raw_arguments="all done"),)
    assert reply.tool_calls[0].arguments_json() == "all done"


def test_a_positional_dict_becomes_the_arguments() -> None:
    reply = MockModel(["{f({'a': 1})}"]).complete([])
    assert reply.tool_calls == (ToolCall("call_1", "f", {"a": 1}),)


def test_braces_that_are_not_calls_stay_text() -> None:
    text = "A set {1, 2} and {name} and {f(} stay."
    assert MockModel([text]).complete([]) == Message("assistant", text)


def test_non_literal_arguments_are_a_script_error() -> None:
    with pytest.raises(ScriptError) as info:
        MockModel(["{f(x=y)}"]).complete([])
    assert str(info.value).startswith("scripted tool call {f(x=y)}: arguments must be literal "
                                      "values (")


def test_mixed_positional_arguments_are_a_script_error() -> None:
    with pytest.raises(ScriptError) as info:
        MockModel(["{f('a', b=1)}"]).complete([])
    assert str(info.value) == (
        "scripted tool call {f('a', b=1)}: use keyword arguments, one string, or one dict"
    )


def test_message_and_callable_replies() -> None:
    preset = Message("assistant", "preset", tool_calls=(ToolCall("x", "f", {}),))
    model = MockModel([preset, lambda messages: f"saw {len(messages)}",
                       lambda messages: Message("assistant", "msg")])
    assert model.complete([]) is preset
    assert model.complete([Message("user", "a"), Message("user", "b")]) == Message("assistant",
                                                                                   "saw 2")
    assert model.complete([]) == Message("assistant", "msg")


def test_calls_record_what_each_call_saw() -> None:
    model = MockModel(["a", "b"])
    model.complete([Message("user", "hi")], [SCHEMA])
    model.complete([Message("user", "hi"), Message("assistant", "a")])
    assert len(model.calls) == 2
    assert model.calls[0].messages == (Message("user", "hi"),)
    assert model.calls[0].tools == (SCHEMA,)
    assert model.calls[0].tool_names == ("search",)
    assert model.calls[1].messages == (Message("user", "hi"), Message("assistant", "a"))
    assert model.calls[1].tools == ()


def test_assert_complete_fails_when_replies_are_left() -> None:
    model = MockModel(["a", "b", "c"])
    model.complete([])
    with pytest.raises(AssertionError) as info:
        model.assert_complete()
    assert str(info.value) == (
        "MockModel: 2 of 3 scripted replies were not used (the model was called 1 times); "
        "next unused: 'b'"
    )


def test_running_out_says_how_many_were_scripted_and_which_call_ran_out() -> None:
    model = MockModel(["only one"])
    session = Runner(model, LoopTemplate([UserTemplate(), AssistantTemplate()]),
                     ScriptedInterface(["hi", "again"]), raise_errors=False).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.ERROR
    assert session.outcome.error == (
        "ScriptError: MockModel ran out of replies: 1 scripted, and model call 2 asked for "
        "another. The conversation so far:\n"
        "  [0] user: 'hi'\n"
        "  [1] assistant: 'only one'\n"
        "  [2] user: 'again'"
    )


def test_script_error_is_an_assertion_error_and_a_model_error() -> None:
    with pytest.raises(AssertionError):
        MockModel([]).complete([])
    with pytest.raises(ModelError):
        MockModel([]).complete([])


def test_repeat_last() -> None:
    model = MockModel(["a", "b"], repeat_last=True)
    assert [model.complete([]).content for _ in range(4)] == ["a", "b", "b", "b"]
    model.assert_complete()


def test_add_scripts_more() -> None:
    model = MockModel(["a"])
    model.add("b", "c")
    assert [model.complete([]).content for _ in range(3)] == ["a", "b", "c"]
    assert model.remaining == 0


def test_a_reply_of_another_type_is_a_script_error() -> None:
    with pytest.raises(ScriptError) as info:
        MockModel([42]).complete([])  # type: ignore[list-item]
    assert str(info.value) == "MockModel reply 1: a reply must be a str or a Message, got int"


def test_mock_model_under_arun() -> None:
    model = MockModel(["{t(a=1)} async"])
    reply = asyncio.run(model.acomplete([Message("user", "x")]))
    assert reply == Message("assistant", "async", tool_calls=(ToolCall("call_1", "t", {"a": 1}),))


def test_function_model_sync() -> None:
    seen: list[tuple[int, int]] = []

    def fn(messages: Sequence[Message], tools: ToolSchemas) -> str:
        seen.append((len(messages), len(tools)))
        return f"you said {messages[-1].content} {{search(q='x')}}"

    model = FunctionModel(fn)
    reply = model.complete([Message("user", "hi")], [SCHEMA])
    assert reply == Message("assistant", "you said hi",
                            tool_calls=(ToolCall("call_1", "search", {"q": "x"}),))
    assert asyncio.run(model.acomplete([Message("user", "yo")])).content == "you said yo"
    assert seen == [(1, 1), (1, 0)]
    assert model.calls == 2


def test_function_model_async_fn_under_run_and_arun() -> None:
    async def fn(messages: Sequence[Message], tools: ToolSchemas) -> Message:
        await asyncio.sleep(0)
        return Message("assistant", f"async {len(messages)}")

    template = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
    by_run = Runner(FunctionModel(fn), template).run()
    by_arun = asyncio.run(Runner(FunctionModel(fn), template).arun())
    assert by_run.messages[-1] == Message("assistant", "async 1")
    assert by_arun.messages == by_run.messages


def test_echo_model_repeats_the_last_user_message() -> None:
    model = EchoModel()
    messages = [Message("user", "first"), Message("user", "second"),
                Message("assistant", "not me")]
    assert model.complete(messages) == Message("assistant", "second")
    assert model.complete([]) == Message("assistant", "")
    session = Runner(EchoModel(), LoopTemplate([UserTemplate(), AssistantTemplate()]),
                     ScriptedInterface(["ping", "pong"])).run(Session())
    assert [m.content for m in session.messages] == ["ping", "ping", "pong", "pong"]


@pytest.mark.parametrize("model", [MockModel([]), FunctionModel(lambda m, t: ""), EchoModel()])
def test_the_test_models_implement_the_model_protocol(model: object) -> None:
    assert isinstance(model, Model)


def test_the_parser_raises_its_own_error_not_an_assertion() -> None:
    from convo._errors import ToolCallParseError
    from convo.models._script import CallIds, parse_reply

    with pytest.raises(ToolCallParseError) as info:
        parse_reply("{f(x=y)}", CallIds())
    assert not isinstance(info.value, AssertionError)
    assert str(info.value).startswith("scripted tool call {f(x=y)}: arguments must be literal")
