"""A subroutine inside a subroutine (API.md §11, §28), at any depth: each child's model sees
only its own session; each child's record holds the records of the subroutines inside it, so
that a resume, a rebuild and a branch through them replay them (no model or tool called
again), in process and through a transcript."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from convo import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    Message,
    MockModel,
    Runner,
    Session,
    SubroutineTemplate,
    SystemTemplate,
    Template,
    ToolContext,
    ToolingTemplate,
    UserTemplate,
    tool,
)

RAN: list[str] = []
SENT: list[list[str]] = []  # what each model call was sent (its messages' texts)


@tool
def stamp(context: ToolContext, mark: str) -> str:
    """Stamp a mark."""
    RAN.append(mark)
    context.state.setdefault("marks", []).append(mark)
    return f"stamped {mark}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    SENT.append([str(m.content) for m in messages])
    last = messages[-1]
    if last.role == "user" and str(last.content).startswith("stamp "):
        return f"{{stamp(mark='{str(last.content)[6:]}')}}"
    if last.role == "tool":
        return f"done: {last.content}"
    return f"re: {last.content}"


def nested(depth: int, *, keep: str = "last") -> Template:
    """``depth`` subroutines, one inside the other; each asks for a stamp of its own (its
    depth and the turn), then runs the next, then says what it did."""
    inside: list[Template] = [] if depth == 1 else [nested(depth - 1, keep=keep)]
    return SubroutineTemplate(LinearTemplate([
        UserTemplate(f"stamp d{depth} t{{{{ turn }}}}"), ToolingTemplate([stamp]), *inside,
        AssistantTemplate()]), inherit="none", keep=keep, template_id=f"depth {depth}")


def chat(depth: int = 3, *, keep: str = "last") -> Template:
    return LoopTemplate([Turn(), UserTemplate(), nested(depth, keep=keep), AssistantTemplate()])


@attrs.define(slots=True, eq=False)
class Turn(Template):
    """Which turn it is, in ``state["turn"]`` (the same again when replayed)."""

    def render(self, session: Session) -> Any:
        session.state["turn"] = 1 + sum(m.role == "user" for m in session.messages)
        yield from ()
        return session


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()
    SENT.clear()


def test_a_nested_childs_model_is_sent_its_own_session_not_the_outer_childs() -> None:
    inner = SubroutineTemplate(LinearTemplate([UserTemplate("Inner task."),
                                               AssistantTemplate()]), inherit="none")
    middle = SubroutineTemplate(LinearTemplate([UserTemplate("Middle task."), inner,
                                                AssistantTemplate()]), inherit="none")
    outer = SubroutineTemplate(LinearTemplate([UserTemplate("Outer task."), middle,
                                               AssistantTemplate()]), inherit="all")
    model = MockModel(["inner reply", "middle reply", "outer reply", "top reply"])
    session = Runner(model, LinearTemplate([SystemTemplate("System."), outer,
                                            AssistantTemplate()])).run()
    assert [[m.content for m in call.messages] for call in model.calls] == [
        ["Inner task."],
        ["Middle task.", "inner reply"],
        ["System.", "Outer task.", "middle reply"],
        ["System.", "outer reply"]]
    assert [m.content for m in session.messages] == ["System.", "outer reply", "top reply"]
