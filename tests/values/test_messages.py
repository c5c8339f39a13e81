"""Message and ToolCall (API.md §1)."""

from __future__ import annotations

import attrs
import pytest

from convo import Message, ToolCall


@pytest.mark.parametrize("role", ["system", "user", "assistant", "tool"])
def test_each_allowed_role_makes_a_message(role: str) -> None:
    message = Message(role, "hi")  # type: ignore[arg-type]
    assert (message.role, message.content) == (role, "hi")


@pytest.mark.parametrize("role", ["bot", "System", "", "function"])
def test_any_other_role_is_a_value_error_naming_the_allowed_roles(role: str) -> None:
    with pytest.raises(ValueError) as info:
        Message(role)  # type: ignore[arg-type]
    assert str(info.value) == (
        "Message role must be one of 'system', 'user', 'assistant', 'tool'; "
        f"got {role!r}"
    )


def test_defaults() -> None:
    message = Message("user")
    assert message.content == ""
    assert message.tool_calls == ()
    assert message.tool_call_id is None
    assert message.name is None
    assert message.metadata == {}


def test_message_is_frozen() -> None:
    message = Message("user", "hi")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.role = "assistant"  # type: ignore[misc]


def test_tool_call_is_frozen() -> None:
    call = ToolCall("call_1", "search", {"q": "x"})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        call.name = "other"  # type: ignore[misc]


def test_messages_are_values() -> None:
    assert Message("user", "hi") == Message("user", "hi")
    assert Message("user", "hi") != Message("assistant", "hi")
    assert hash(Message("user", "hi")) == hash(Message("user", "hi"))
    calls = [ToolCall("c", "f", {"a": [1]})]
    with_calls = Message("assistant", tool_calls=calls, metadata={"k": 1})
    same = Message("assistant", tool_calls=list(calls), metadata={"k": 1})
    assert len({with_calls, same, Message("user", "hi")}) == 2


def test_assistant_message_carries_tool_calls_as_a_tuple() -> None:
    calls = [ToolCall("call_1", "search", {"q": "x"}), ToolCall("call_2", "add", {"a": 1})]
    message = Message("assistant", tool_calls=calls)
    assert message.tool_calls == tuple(calls)
    assert isinstance(message.tool_calls, tuple)


def test_tool_message_answers_one_call() -> None:
    message = Message("tool", "42", tool_call_id="call_1", name="add")
    assert (message.tool_call_id, message.name) == ("call_1", "add")


def test_metadata_is_kept() -> None:
    message = Message("assistant", "hi", metadata={"usage": {"total_tokens": 3}})
    assert message.metadata == {"usage": {"total_tokens": 3}}


def test_message_dict_round_trip_leaves_defaults_out() -> None:
    assert Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}
    full = Message(
        "assistant", "ok",
        tool_calls=(ToolCall("call_1", "search", {"q": "x"}),),
        name="bot", metadata={"k": 1},
    )
    assert full.to_dict() == {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [{"id": "call_1", "name": "search", "arguments": {"q": "x"}}],
        "name": "bot",
        "metadata": {"k": 1},
    }
    assert Message.from_dict(full.to_dict()) == full
    tool = Message("tool", "r", tool_call_id="call_1")
    assert Message.from_dict(tool.to_dict()) == tool


def test_tool_call_arguments_json() -> None:
    assert ToolCall("c", "f", {"q": "é"}).arguments_json() == '{"q": "é"}'
    raw = ToolCall("c", "f", {}, raw_arguments="not json")
    assert raw.arguments_json() == "not json"
    assert raw.to_dict() == {"id": "c", "name": "f", "arguments": {}, "raw_arguments": "not json"}
    assert ToolCall.from_dict(raw.to_dict()) == raw


def test_with_id_is_evolve_without_checking_again() -> None:
    """The served rebuild and the stateless replay give ids with ``with_id``: the same
    message as ``attrs.evolve`` makes, every field kept (the objects themselves, not copies)."""
    from convo._messages import with_id
    from convo._parts import Text

    call = ToolCall("c1", "get_weather", {"city": "Oslo"}, raw_arguments='{"city":"Oslo"}')
    for message in (Message("assistant", (Text("hi"),), tool_calls=(call,), name="bot",
                            metadata={"usage": {"prompt_tokens": 3}}, id="old"),
                    Message("tool", "Sunny", tool_call_id="c1", name="get_weather")):
        given = with_id(message, "m0001")
        assert type(given) is Message
        assert given.id == "m0001" and message.id in ("old", None)
        assert repr(given) == repr(attrs.evolve(message, id="m0001"))
        for field in attrs.fields(Message):
            if field.name != "id":
                assert getattr(given, field.name) is getattr(message, field.name)
    assert with_id(Message("user", "x", id="a"), None).id is None


def test_its_written_out_init_converts_and_checks_as_its_fields_say() -> None:
    # (``Message.__init__`` is not attrs': the same signature, conversions and check)
    given = Message("assistant", [], tool_calls=[ToolCall("c", "f")], metadata={"a": 1},
                    id="m")
    assert given.content == "" and given.tool_calls == (ToolCall("c", "f"),)
    assert type(given.metadata).__name__ == "mappingproxy" and dict(given.metadata) == {"a": 1}
    assert Message("user", "hi").metadata is Message("user", "hi", metadata={}).metadata
    assert attrs.evolve(given, content="x") == Message(
        "assistant", "x", tool_calls=(ToolCall("c", "f"),), metadata={"a": 1})
    assert attrs.evolve(given, content="x").id == "m"
    with attrs.validators.disabled():
        assert Message("narrator", "once").role == "narrator"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Message role must be one of"):
        attrs.evolve(given, role="narrator")
