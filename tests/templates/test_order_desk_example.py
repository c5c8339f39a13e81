"""examples/order_desk.py: the three pieces of API.md §22 together, run and resumed."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from convo import MockModel, Runner, RunStatus, ScriptedInterface, Session

PATH = Path(__file__).resolve().parents[2] / "examples" / "order_desk.py"


@pytest.fixture
def desk() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("convo_example_order_desk", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_the_order_desk_delegates_to_the_shipping_desk(desk: ModuleType) -> None:
    session = Runner(desk.mock_model, desk.template, ScriptedInterface(desk.demo_input)).run(
        Session(state=dict(desk.state)))
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    assert session.state == {
        "order_id": "A1", "order": desk.ORDERS["A1"], "last_question": "Thanks!", "turns": 2}
    assert session.messages[0].content == (
        'You help a customer with order A1: {"carrier": "PostNL", "item": "blue mug", '
        '"status": "shipped", "tracking": "3S123"}. Ask the shipping desk about deliveries.')
    assert [(m.role, m.content) for m in session.messages[1:]] == [
        ("user", "Where   is my mug?"), ("assistant", ""),
        ("tool", "It is at the local depot and should arrive tomorrow."),
        ("assistant", "Your blue mug is at the local depot and should arrive tomorrow."),
        ("user", "Thanks!"), ("assistant", "You're welcome!")]
    [run] = session.subroutines
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool",
                                              "assistant"]
    desk.mock_model.assert_complete()

    model = MockModel(["Bye!"])
    resumed = Runner(model, desk.template, ScriptedInterface(["Bye"])).resume(session)
    assert len(model.calls) == 1  # neither the shipping desk nor the order look-up again
    assert resumed.subroutines == session.subroutines
    assert resumed.state["turns"] == 3
