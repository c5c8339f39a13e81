"""The support-bot example: saved in its middle state, resumed there (API and CLI), drawn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from example_kit import load_example, resume_saved

from convo import Message, MockModel, Runner, RunStatus, ScriptedInterface, Session, StateEntered
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import CaughtUp
from convo.templates._graph import mermaid
from convo.templates._states import STATE_KEY

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "examples" / "support_bot.py"
FIXTURE = str(ROOT / "tests" / "cli_fixtures" / "support.py")
BILLING = "You are at the billing desk: check charges, refund mistakes."


@pytest.fixture
def bot() -> ModuleType:
    return load_example("support_bot")


def run_saved(path: Path, bot: ModuleType, model: MockModel, user: list[str]) -> Session:
    session = Session()
    writer = TranscriptWriter.create(path, session)
    try:
        return Runner(model, bot.template, ScriptedInterface(user), on_event=writer).run(session)
    finally:
        writer.close()


def test_the_support_bot_is_resumed_in_its_middle_state(tmp_path: Path,
                                                        bot: ModuleType) -> None:
    path = tmp_path / "support.jsonl"
    replies = list(bot.mock_model.replies)
    first = run_saved(path, bot, MockModel(replies[:4]), bot.demo_input[:1])
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED
    saved = load_transcript(path)
    assert saved.internal == {STATE_KEY: "billing"}  # the transcript says where it stopped
    assert saved.state == {}
    assert saved.messages == first.messages and len(saved.messages) == 12

    model = MockModel(replies[4:])
    session, events = resume_saved(bot, saved, path, model)
    model.assert_complete()  # no saved model call was made again
    assert [e for e in events if isinstance(e, CaughtUp)] == [CaughtUp(12, 12)]
    assert [(e.name, e.previous) for e in events if isinstance(e, StateEntered)] == [
        ("triage", None), ("billing", "triage"), ("returns", "billing")]
    live = model.calls[0].messages
    assert live[6] == Message("system", BILLING)  # the first live call is in billing
    assert live[-1] == Message("user", bot.demo_input[1])
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    assert session.internal == {STATE_KEY: "returns"} and session.state == {}
    assert load_transcript(path) == session


def test_the_same_through_convo_run_save_and_resume(tmp_path: Path, bot: ModuleType) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["NO_COLOR"] = "1"
    path = str(tmp_path / "t.jsonl")

    def convo(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "convo", *args], input=stdin, env=env,
                              capture_output=True, text=True, timeout=30, check=False)

    first = convo("run", FIXTURE, "--save", path, stdin=bot.demo_input[0] + "\n")
    assert first.returncode == 0, first.stderr
    assert load_transcript(path).internal == {STATE_KEY: "billing"}
    rest = "".join(line + "\n" for line in bot.demo_input[1:])
    second = convo("run", FIXTURE, "--resume", path, "--save", path, stdin=rest)
    assert second.returncode == 0, second.stderr
    assert "--- resumed after 12 saved messages; live from here ---" in second.stdout
    session = load_transcript(path)
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    whole = Runner(bot.mock_model, bot.template, ScriptedInterface(bot.demo_input)).run()
    assert [(m.role, m.content) for m in session.messages] == [
        (m.role, m.content) for m in whole.messages]
    types = [json.loads(line)["type"] for line in Path(path).read_text().splitlines()]
    assert types.count("resumed") == 1


GRAPH = """\
stateDiagram-v2
    [*] --> triage
    triage --> billing: go_to_billing
    triage --> returns: go_to_returns
    triage --> [*]: end_conversation
    billing --> returns: go_to_returns
    billing --> triage: go_to_triage
    billing --> [*]: end_conversation
    returns --> billing: go_to_billing
    returns --> triage: go_to_triage
    returns --> [*]: end_conversation
"""


def test_convo_graph_prints_the_states_as_mermaid(bot: ModuleType) -> None:
    assert mermaid(bot.template) == GRAPH
    result = subprocess.run([sys.executable, "-m", "convo", "graph", str(SUPPORT)],
                            capture_output=True, text=True, timeout=30, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, GRAPH, "")
    quiz = str(ROOT / "examples" / "quiz.py")
    result = subprocess.run([sys.executable, "-m", "convo", "graph", quiz],
                            capture_output=True, text=True, timeout=30, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"convo: error: {quiz}: LinearTemplate has no StateMachineTemplate "
                             "to draw\n")


def test_the_picture_in_the_docs_is_the_one_convo_graph_draws() -> None:
    text = (ROOT / "docs" / "states.md").read_text(encoding="utf-8")
    block = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert block == GRAPH
