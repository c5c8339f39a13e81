"""Every example runs offline, on its own mock model, with its demo input.

The example convention (the ``convo`` command relies on it too): a file in ``examples/``
defines ``template``, ``mock_model``, optionally ``state`` (the initial ``session.state``),
``limits``, ``context`` (a ``ContextWindow``) and ``demo_input`` (what a user would type).
Files named ``test_*.py`` are example *tests* for users; they are run with pytest here.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from convo import Message, Runner, RunStatus, ScriptedInterface, Session
from convo.models import FunctionModel, Model
from convo.templates import Template

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("test_"))
EXAMPLE_TESTS = sorted(EXAMPLES.glob("test_*.py"))
SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"


def _load(path: Path) -> Iterator[ModuleType]:
    name = f"convo_example_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


@pytest.fixture(params=EXAMPLE_FILES, ids=lambda p: p.name)
def example(request: pytest.FixtureRequest,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield from _load(request.param)


def _defines_template(module: ModuleType) -> bool:
    return isinstance(getattr(module, "template", None), Template)


def test_there_are_examples() -> None:
    assert "math_teacher.py" in [p.name for p in EXAMPLE_FILES]


def test_example_runs_offline_on_its_mock_model(example: ModuleType) -> None:
    if not _defines_template(example):
        pytest.skip(f"{example.__file__} defines no template")
    assert isinstance(example.mock_model, Model), "an example defines mock_model, a Model"
    demo_input = getattr(example, "demo_input", [])
    assert all(isinstance(line, str) for line in demo_input)
    state = getattr(example, "state", {})
    assert isinstance(state, dict)

    approvals = getattr(example, "demo_approvals", [])
    session = Runner(example.mock_model, example.template,
                     ScriptedInterface(demo_input, approvals=approvals),
                     raise_errors=False, limits=getattr(example, "limits", None),
                     context=getattr(example, "context", None),
                     guards=getattr(example, "guards", ()),
                     ).run(Session(state=dict(state)))

    assert session.outcome is not None
    assert session.outcome.status is not RunStatus.ERROR, session.outcome.error
    assert session.messages, "the demo should say something"


def test_example_is_runnable_as_a_script(example: ModuleType) -> None:
    source = Path(str(example.__file__)).read_text(encoding="utf-8")
    if not _defines_template(example):
        pytest.skip(f"{example.__file__} defines no template")
    assert 'if __name__ == "__main__":' in source
    assert example.__doc__, "an example starts with a docstring saying what it shows"


def test_guarded_support_redacts_blocks_and_refuses() -> None:
    example = next(_load(EXAMPLES / "guarded_support.py"))
    session = Runner(example.mock_model, example.template,
                     ScriptedInterface(example.demo_input), guards=example.guards).run()
    said = [m.content for m in session.messages if m.role in ("assistant", "tool")]
    assert said == [
        "The card on file is [card]; mail [email] for a copy.",
        "I can only help with orders.",
        "", "Blocked: refunds over 100 need a person",
        "I can't refund that much myself: a colleague will call you."]


def test_math_teacher_ends_with_its_farewell() -> None:
    [teacher] = _load(EXAMPLES / "math_teacher.py")  # the generator closes after unpacking
    session = Runner(teacher.mock_model, teacher.template,
                     ScriptedInterface(teacher.demo_input)).run(Session(state=dict(teacher.state)))
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.outcome.farewell == "Goodbye! Keep practising a little every day."
    assert session.messages[0].content.startswith("You are a patient math teacher for Sam, ")
    assert [m.role for m in session.messages] == [
        "system", "assistant", "user", "assistant", "user", "assistant", "user", "assistant",
    ]
    assert session.messages[-1].content == session.outcome.farewell


@pytest.mark.parametrize("path", EXAMPLE_TESTS, ids=lambda p: p.name)
def test_example_tests_pass(path: Path, pytester: pytest.Pytester,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile(**{path.stem: path.read_text(encoding="utf-8")})
    snapshots = SNAPSHOTS / path.stem  # where pytest run in this repo keeps them
    if snapshots.is_dir():
        shutil.copytree(snapshots, pytester.path / "tests" / "snapshots" / path.stem)
    result = pytester.runpytest("-W", "error", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert result.ret == 0, result.stdout.str()
    assert outcomes.get("passed", 0) > 0


def test_refund_bot_asks_before_each_refund() -> None:
    [bot] = _load(EXAMPLES / "refund_bot.py")
    user = ScriptedInterface(bot.demo_input, approvals=bot.demo_approvals)
    notes: list[str] = []

    def model(messages: Sequence[Message], tools: Any) -> Any:
        notes.append(messages[-1].content)
        return bot._reply(messages, tools)

    session = Runner(FunctionModel(model), bot.template, user, limits=bot.limits).run()
    assert notes[:3] == [  # the budget, told to the model (limits = Limits(tell_model=True))
        "Budget: 39 of 40 model calls left; 20 of 20 tool calls left.",
        "Budget: 38 of 40 model calls left; 19 of 20 tool calls left.",
        "Budget: 37 of 40 model calls left; 19 of 20 tool calls left.",
    ]
    assert not any(m.content.startswith("Budget: ") for m in session.messages)
    assert [c.arguments["order"] for c in user.asked_approvals] == ["A1", "B2"]
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Order A1: a kettle, 25.00 EUR, delivered.", "Finished",
        "Refunded 25.00 EUR for a kettle (order A1).", "Finished",
        "Rejected by the user: no, that one was a gift", "Finished",
        '{"status": "success", "message": "Goodbye, and thank you for shopping with us!"}',
    ]
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    user.assert_complete()
