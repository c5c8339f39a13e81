"""ContextWindow in whole runs: the runner's and a template's window, summaries counted and
reused after a resume, the error before any call, the terminal note, and a server's
context-length error through the real SDK."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from example_kit import load_example
from provider_fakes import FakeProvider
from weather_tools import chat, chat_loop

from convo import (
    ContextLengthError,
    ContextTrimmed,
    ContextWindow,
    DefinitionError,
    Message,
    ModelError,
    OpenAIModel,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
)
from convo._resume import resume
from convo._summary import CONTEXT_KEY
from convo._terminal.printer import ConsolePrinter
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import Event, ModelCallStarted, TextDelta
from convo.models import FunctionModel
from convo.models._base import DeltaCallback, SyncModel, ToolSchemas
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    UserTemplate,
)
from convo.testing import ErrorReply, OpenAIServer
from convo.tools import tool


class Chat(SyncModel):
    """Answers each user message; writes summaries when asked; streams what it says."""

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []
        self.summaries = 0
        self.replies = 0

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        self.seen.append(list(messages))
        if messages[0].content.startswith("You summarise"):
            self.summaries += 1
            text = f"summary {self.summaries}"
        else:
            self.replies += 1
            text = f"reply {self.replies}: " + "x" * 200
        if on_delta is not None:
            on_delta(text)
        return Message("assistant", text)


class WireChat:
    """``Chat`` as a fake server's handler: the same replies, read from a request body of any
    provider's wire (a summary request is the one whose system prompt asks for a summary)."""

    def __init__(self) -> None:
        self.summaries = 0
        self.replies = 0
        self.said: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        if "You summarise" in json.dumps(body):
            self.summaries += 1
            return f"summary {self.summaries}"
        self.replies += 1
        # in words: a fake server's usage counts words (OpenAI) or characters (Anthropic)
        self.said.append(f"reply {self.replies}: " + "xxx " * 100)
        return self.said[-1]


def tutor_chat(turns: int) -> LinearTemplate:
    return chat("You are a patient tutor.", turns=turns)


def said(n: int) -> list[str]:
    return [f"question {i}: " + "q" * 200 for i in range(n)]


def test_the_runner_window_bounds_every_call_and_keeps_the_history() -> None:
    model, events = Chat(), []
    window = ContextWindow(1000)
    session = Runner(model, tutor_chat(30), ScriptedInterface(said(30)), context=window,
                     on_event=events.append).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    assert len(session.messages) == 61  # nothing dropped from the session itself
    assert all(window.estimate(sent) <= 1000 for sent in model.seen)
    assert all(sent[0].content == "You are a patient tutor." for sent in model.seen)
    assert all(sent[-1].content.startswith("question") for sent in model.seen)
    trimmed = [e for e in events if isinstance(e, ContextTrimmed)]
    assert trimmed and trimmed[-1].kept == len(model.seen[-1])
    assert trimmed[-1].kept + trimmed[-1].dropped == 60
    assert not any(isinstance(e, ContextTrimmed) for e in events[:20])
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    assert started[-1].messages == len(model.seen[-1])


def test_a_template_window_takes_precedence() -> None:
    model = Chat()
    template = LinearTemplate([
        SystemTemplate("S"),
        LoopTemplate([UserTemplate(), AssistantTemplate(context=ContextWindow(300))],
                     exit_loop_count=6),
    ])
    Runner(model, template, ScriptedInterface(said(6)), context=ContextWindow(100_000)).run()
    assert max(ContextWindow(10).estimate(sent) for sent in model.seen) <= 300


def test_summaries_once_per_cut_counted_and_reused_after_a_resume(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    model = Chat()
    window = ContextWindow(1200, summarize=True)
    session = Session()
    writer = TranscriptWriter.create(path, session)
    Runner(model, tutor_chat(40), ScriptedInterface(said(20)), context=window,
           on_event=writer).run(session)
    writer.close()
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    # Far fewer summaries than calls: a cut is reused until the tail outgrows it.
    assert 1 <= model.summaries <= 4 and model.replies == 20
    assert session.outcome.model_calls == model.summaries + model.replies
    record = session.internal[CONTEXT_KEY]
    assert record["summary"] == f"summary {model.summaries}"
    assert record["calls"] == model.summaries
    assert all(window.estimate(sent) <= 1200 for sent in model.seen)
    last_sent = model.seen[-1]
    assert last_sent[1].content.startswith("Summary of the earlier conversation (")
    assert last_sent[1].content.endswith(f"summary {model.summaries}")

    # Resume: the saved summary is reused, not paid for again.
    saved = load_transcript(path)
    assert saved.internal[CONTEXT_KEY] == record and CONTEXT_KEY not in saved.state
    again = Chat()
    template, resumed_session = resume(tutor_chat(40), saved)
    Runner(again, template, ScriptedInterface(["one more"]), context=ContextWindow(
        1200, summarize=True)).run(resumed_session)
    assert again.replies == 1 and again.summaries == 0
    # The resumed conversation's count covers it all: saved replies and summaries, the new one.
    assert resumed_session.outcome is not None
    assert resumed_session.outcome.model_calls == model.replies + model.summaries + 1
    assert again.seen[0][1] == last_sent[1]


def test_summaries_under_arun_too(provider_model: FakeProvider) -> None:
    model = WireChat()
    session = asyncio.run(Runner(provider_model(handler=model), tutor_chat(20),
                                 ScriptedInterface(said(20)),
                                 context=ContextWindow(1200, summarize=True)).arun())
    assert model.summaries >= 1
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.model_calls == model.summaries + 20


def test_a_summary_is_not_streamed_to_the_user(provider_model: FakeProvider) -> None:
    events: list[Event] = []
    model = WireChat()
    session = Runner(provider_model(handler=model, stream=True), tutor_chat(20),
                     ScriptedInterface(said(20)), context=ContextWindow(1200, summarize=True),
                     on_event=events.append).run()
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    # a provider streams a reply in pieces: together they are the 20 replies, nothing else
    assert model.summaries >= 1 and model.replies == 20
    assert "".join(deltas) == "".join(model.said)
    assert not any(d.startswith("summary") for d in deltas)
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_a_summary_model_of_its_own() -> None:
    cheap = FunctionModel(lambda messages, tools: "short summary")
    model = Chat()
    Runner(model, tutor_chat(20), ScriptedInterface(said(20)),
           context=ContextWindow(1200, summarize=True, summary_model=cheap)).run()
    assert cheap.calls >= 1 and model.summaries == 0
    assert model.seen[-1][1].content.endswith("short summary")


def test_too_long_ends_the_run_before_any_model_call() -> None:
    model = Chat()
    template = LinearTemplate([SystemTemplate("S"), UserTemplate("u" * 4000),
                               AssistantTemplate()])
    session = Runner(model, template, context=ContextWindow(500), raise_errors=False).run()
    assert model.seen == []
    assert session.outcome is not None and session.outcome.status is RunStatus.ERROR
    assert session.outcome.error is not None
    assert session.outcome.error.startswith(
        "ContextLengthError: the conversation does not fit in ContextWindow(max_tokens=500): "
        "the newest messages alone need about 1009 tokens")
    assert session.outcome.model_calls == 0
    with pytest.raises(ContextLengthError):
        Runner(model, template, context=ContextWindow(500)).run()


def test_usage_reported_by_the_model_corrects_the_estimate() -> None:
    estimates: list[int] = []

    def doubled(messages: Sequence[Message], tools: Any) -> Message:
        estimates.append(ContextWindow(1).estimate(messages))
        return Message("assistant", "ok " * 50,
                       metadata={"usage": {"prompt_tokens": 2 * estimates[-1]}})

    window = ContextWindow(1500)
    model = FunctionModel(doubled)
    Runner(model, tutor_chat(12), ScriptedInterface(said(12)), context=window).run()
    assert window.ratio(model) == pytest.approx(2.0, rel=0.01)
    # After the first report, what is sent fits in 1500 *reported* tokens.
    assert max(estimates[1:]) * 2 <= 1500 < max(estimates[1:]) * 2 + 120


def test_tool_exchanges_survive_trimming() -> None:
    @tool
    def look(q: str) -> str:
        """Look it up.

        Args:
            q: What.
        """
        return "found: " + "r" * 300

    calls = iter(range(1000))

    def agent(messages: Sequence[Message], tools: Any) -> str:
        n = next(calls)
        return "{look(q='a')}{look(q='b')}" if n % 3 != 2 else "done " + "d" * 100

    template = chat_loop(look, system="S", turns=8, context=ContextWindow(900))
    sent_log: list[Sequence[Message]] = []
    model = FunctionModel(lambda m, t: (sent_log.append(list(m)), agent(m, t))[1])
    session = Runner(model, template, ScriptedInterface(said(8))).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    for sent in sent_log:
        ids = {c.id for m in sent for c in m.tool_calls}
        assert {m.tool_call_id for m in sent if m.role == "tool"} <= ids
        assert sent[-1].role in ("user", "tool")


def test_the_runner_checks_its_context() -> None:
    with pytest.raises(DefinitionError, match="context must be a ContextWindow or None, got int"):
        Runner(Chat(), tutor_chat(1), context=1000)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="AssistantTemplate: context must be a "
                                              "ContextWindow or None, got int"):
        AssistantTemplate(context=1000)  # type: ignore[arg-type]


def test_the_terminal_notes_trimming_once_per_change() -> None:
    out = io.StringIO()
    printer = ConsolePrinter(out, fancy=False)
    for event in (ContextTrimmed(10, 5, False), ContextTrimmed(10, 6, False),
                  ContextTrimmed(12, 5, True)):
        printer(event)
    assert out.getvalue() == ("--- context: 10 earlier messages not sent ---\n"
                              "--- context: 12 earlier messages summarised ---\n")


# --- the server says the context is too long ----------------------------------------------------

@pytest.mark.parametrize("body", [
    {"error": {"message": "This model's maximum context length is 4096 tokens. However, your "
                          "messages resulted in 5000 tokens. Please reduce the length of the "
                          "messages.", "type": "invalid_request_error",
               "code": "context_length_exceeded"}},
    {"error": {"code": 400, "message": "the request exceeds the available context size, try "
                                       "increasing it", "type": "exceed_context_size_error"}},
    {"object": "error", "message": "This model's maximum context length is 2048 tokens. "
                                   "However, you requested 2100 tokens.",
     "type": "BadRequestError", "code": 400},
])
def test_a_context_length_error_from_the_server_suggests_a_window(body: dict[str, Any]) -> None:
    with OpenAIServer([ErrorReply(400, body=body)]) as server:
        model = OpenAIModel("m", base_url=server.base_url, max_retries=0)
        template = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
        with pytest.raises(ContextLengthError) as caught:
            Runner(model, template).run()
        model.close()
    message = str(caught.value)
    assert message.startswith(f"HTTP 400 Bad Request from {server.base_url}")
    assert "ContextWindow(max_tokens=...)" in message
    assert isinstance(caught.value, ModelError)


def test_another_400_is_not_a_context_length_error() -> None:
    with OpenAIServer([ErrorReply(400, body={"error": {"message": "bad temperature"}})]) as s:
        model = OpenAIModel("m", base_url=s.base_url, max_retries=0)
        with pytest.raises(ModelError) as caught:
            Runner(model, LinearTemplate([UserTemplate("hi"), AssistantTemplate()])).run()
        model.close()
    assert not isinstance(caught.value, ContextLengthError)
    assert "ContextWindow" not in str(caught.value)


def test_the_long_chat_example_summarises_once() -> None:
    example = load_example("long_chat")
    events: list[Event] = []
    session = Runner(example.mock_model, example.template, ScriptedInterface(example.demo_input),
                     on_event=events.append, context=example.context).run()
    assert len(session.messages) == 1 + 4 * len(example.demo_input)
    assert session.internal[CONTEXT_KEY]["calls"] == 1
    trimmed = [e for e in events if isinstance(e, ContextTrimmed)]
    assert trimmed and all(e.summarized for e in trimmed)
    assert session.messages[-1].content == "jam: 3.75 EUR. Anything else?"


def test_through_the_sdk_the_server_sees_only_the_window_and_its_usage_corrects_it() -> None:
    # The fake server counts a token per word (+1 per message): here more than the estimate,
    # so the window learns to send less than the estimate alone would allow.
    def words(body: list[dict[str, Any]]) -> int:
        return sum(len(m["content"].split()) + 1 for m in body)

    questions = [f"q{i} " + "ab " * 60 for i in range(12)]
    with OpenAIServer(["ok " * 60] * 12) as server:
        model = OpenAIModel("m", base_url=server.base_url, max_retries=0)
        window = ContextWindow(800)
        session = Runner(model, tutor_chat(12), ScriptedInterface(questions), context=window).run()
        model.close()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    assert len(session.messages) == 25
    bodies = [r["messages"] for r in server.requests]
    assert [len(b) for b in bodies[:3]] == [2, 4, 6]
    assert len(bodies[-1]) < 24
    assert all(b[0] == {"role": "system", "content": "You are a patient tutor."} for b in bodies)
    assert all(b[-1]["role"] == "user" for b in bodies)
    assert window.ratio(model) > 1.1
    assert all(words(b) <= 800 for b in bodies)  # by the server's own count
    assert max(words(b) for b in bodies) > 700  # and not much less


def test_summary_calls_count_in_the_limits() -> None:
    from convo import Limits

    model = Chat()
    session = Runner(model, tutor_chat(30), ScriptedInterface(said(30)),
                     limits=Limits(model_calls=15),
                     context=ContextWindow(1200, summarize=True)).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.USAGE_LIMIT
    assert session.outcome.limit == "model_calls"
    assert model.summaries >= 1
    assert model.summaries + model.replies == 15 == session.outcome.model_calls


def test_a_served_conversation_keeps_its_summary_across_workers(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from convo.serve import create_app

    def served() -> LinearTemplate:
        return LinearTemplate([SystemTemplate("You are a patient tutor."), LoopTemplate(
            [UserTemplate(), AssistantTemplate(context=ContextWindow(1200, summarize=True))])])

    def tutor(messages: Sequence[Message], tools: Any) -> str:
        if messages[0].content.startswith("You summarise"):
            made.append(len(made) + 1)
            return f"summary {len(made)}"
        return "x" * 200

    made: list[int] = []
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    apps = [create_app(served(), FunctionModel(tutor), store=store) for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        for i, question in enumerate(said(16)):
            client = (one, two)[i % 2]  # each worker rebuilds what the other added
            answer = client.post(f"/api/conversations/{cid}/messages",
                                 json={"content": question})
            assert answer.status_code == 200, answer.text
        body = answer.json()
    import sqlite3

    with sqlite3.connect(tmp_path / "shared.db") as db:  # kept apart from the client's state
        (internal,) = db.execute("SELECT internal FROM conversations").fetchone()
    db.close()
    record = json.loads(internal)[CONTEXT_KEY]
    assert body["state"] == {}
    assert 1 <= len(made) == record["calls"]  # rebuilt on every turn, no summary paid twice
    assert record["summary"] == f"summary {len(made)}"
    assert body["outcome"] is None and len(body["messages"]) == 33


def test_a_subroutines_own_calls_are_trimmed_without_a_summary() -> None:
    from convo import SubroutineTemplate

    model = Chat()
    child = AssistantTemplate(context=ContextWindow(400, summarize=True))
    template = LinearTemplate([
        SystemTemplate("S"),
        LoopTemplate([UserTemplate(), AssistantTemplate("ok " * 60)], exit_loop_count=8),
        SubroutineTemplate(child, inherit="all"),
    ])
    session = Runner(model, template, ScriptedInterface(said(8))).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    [sent] = model.seen
    assert model.summaries == 0 and CONTEXT_KEY not in session.internal
    assert sent[0].content == "S" and ContextWindow(1).estimate(sent) <= 400
    assert len(sent) < 17
