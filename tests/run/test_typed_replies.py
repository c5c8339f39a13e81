"""The core reads a reply's typed facts, whatever words its provider used: a model that builds
its replies with Message.assistant (no OpenAI key anywhere) is truncated, counted and resumed
as an OpenAI reply is."""

from __future__ import annotations

from convo import Event, Message, ReplyTruncated, Runner, ScriptedInterface, Session, Usage
from convo._reply import Finish
from convo.models import MockModel
from convo.templates import LoopTemplate, ToolingTemplate, UserTemplate

CHAT = LoopTemplate([UserTemplate(), ToolingTemplate([])])


def _reply(text: str, finish: Finish, cached: int) -> Message:
    return Message.assistant(text, finish=finish, usage=Usage(
        100, 10, 110, cache_read_tokens=cached, cache_write_tokens=5, reasoning_tokens=2))


def test_a_typed_length_finish_truncates_and_cache_tokens_add_up() -> None:
    seen: list[Event] = []
    model = MockModel([_reply("cut", Finish.LENGTH, 60), _reply("whole", Finish.STOP, 90)])
    session = Runner(model, CHAT, ScriptedInterface(["one", "two"]),
                     on_event=seen.append).run()
    assert [e.message.text for e in seen if isinstance(e, ReplyTruncated)] == ["cut"]
    assert [t.truncated for t in session.turns] == [True, False]
    assert session.outcome is not None
    assert session.outcome.usage == Usage(200, 20, 220, cache_read_tokens=150,
                                          cache_write_tokens=10, reasoning_tokens=4)


def test_a_resumed_run_counts_the_saved_cache_tokens_too() -> None:
    first = Runner(MockModel([_reply("a", Finish.STOP, 60)]), CHAT,
                   ScriptedInterface(["one"])).run()
    saved = Session.from_json(first.to_json())
    session = Runner(MockModel([_reply("b", Finish.STOP, 90)]), CHAT,
                     ScriptedInterface(["two"])).resume(saved)
    assert session.outcome is not None
    assert session.outcome.model_calls == 2
    assert session.outcome.usage == Usage(200, 20, 220, cache_read_tokens=150,
                                          cache_write_tokens=10, reasoning_tokens=4)


def test_the_core_reads_a_messages_typed_facts_not_its_metadata_keys() -> None:
    # Where convo reads a key of Message.metadata that has a typed fact (Message.finish,
    # .usage, .reasoning, .refusal, .error, .rejected, .terminated): only _reply.py (which
    # the properties call), the OpenAI room (its own words) and the test kit's servers.
    import ast
    from pathlib import Path

    import convo

    facts = {"finish_reason", "usage", "refusal", "reasoning", "cancelled", "error",
             "rejected", "terminated", "CANCELLED", "TERMINATED", "ERROR_KEY",
             "TERMINATED_KEY", "REJECTED_KEY", "FINISH_KEY", "USAGE_KEY", "REFUSAL_KEY",
             "REASONING_KEY", "CANCELLED_KEY"}
    package = Path(convo.__file__).resolve().parent
    read = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        if where == "_reply.py" or where.startswith(("models/_openai/", "testing/_server/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "get" and node.args \
                    and getattr(node.func.value, "attr", None) == "metadata":
                key = node.args[0]
            elif isinstance(node, ast.Subscript) and getattr(node.value, "attr", None) == \
                    "metadata":
                key = node.slice
            name = getattr(key, "value", None) or getattr(key, "id", None)
            if name in facts:
                read.append(f"{where}:{node.lineno}: {name}")
    assert read == []
