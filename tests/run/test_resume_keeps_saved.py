"""A resumed run keeps what was saved: a replayed tool message is the saved one (its metadata
too), and the replayed replies' calls and tokens count in the outcome as they did live."""

from __future__ import annotations

from convo import Message, Runner, ScriptedInterface, ToolCall, Usage
from convo.models import MockModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import ToolResult, tool


@tool
def lookup(order: str) -> ToolResult:
    """Find an order.

    Args:
        order: The order's number.
    """
    return ToolResult(f"order {order}: shipped", metadata={"row": 7, "source": "db"})


CHAT = LoopTemplate([UserTemplate(), ToolingTemplate([lookup])])


def _reply(text: str = "", *calls: ToolCall, tokens: int = 0) -> Message:
    usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    return Message("assistant", text, tool_calls=calls, metadata={"usage": usage})


def _first_turn() -> list[Message]:
    model = MockModel([_reply("", ToolCall("c1", "lookup", {"order": "A1"}), tokens=10),
                       _reply("It has shipped.", tokens=20)])
    session = Runner(model, CHAT, ScriptedInterface(["where is A1?"])).run()
    model.assert_complete()
    return session.messages


def test_a_replayed_tool_message_is_the_saved_one_with_its_metadata() -> None:
    saved = _first_turn()
    tool_message = saved[2]
    assert tool_message.metadata == {"row": 7, "source": "db"}
    session = Runner(MockModel([_reply("Bye.", tokens=30)]), CHAT,
                     ScriptedInterface(["thanks"])).resume(_as_session(saved))
    assert session.messages[2] is tool_message
    assert session.messages[2].metadata == {"row": 7, "source": "db"}
    assert [m.content for m in session.messages] == [
        "where is A1?", "", "order A1: shipped", "It has shipped.", "thanks", "Bye."]


def test_the_replayed_replies_count_in_the_outcome() -> None:
    session = Runner(MockModel([_reply("Bye.", tokens=30)]), CHAT,
                     ScriptedInterface(["thanks"])).resume(_as_session(_first_turn()))
    outcome = session.outcome
    assert outcome is not None
    assert outcome.model_calls == 3
    assert outcome.usage == Usage(prompt_tokens=60, completion_tokens=3, total_tokens=63)


def test_a_run_that_ends_while_replaying_counts_what_it_replayed() -> None:
    # Nothing live: the saved turn replays, then the user has nothing more to say.
    session = Runner(MockModel([]), CHAT, ScriptedInterface([])).resume(
        _as_session(_first_turn()))
    outcome = session.outcome
    assert outcome is not None and outcome.status == "stopped"
    assert outcome.model_calls == 2
    assert outcome.usage == Usage(prompt_tokens=30, completion_tokens=2, total_tokens=32)


def _as_session(messages: list[Message]) -> object:
    from convo import Session

    return Session(list(messages))
