"""The convo pytest plugin (registered through the ``pytest11`` entry point).

Fixtures: ``mock_model`` and ``scripted_user`` (factories whose scripts must be used up by the
end of the test, unless made with ``check_complete=False``) and ``openai_server`` (a started
fake OpenAI server). ``-p no:convo`` turns the plugin off.

Every pytest run in a project that has convo installed imports this module, so it imports
nothing from convo at module level: the fixtures import what they need when they are used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from convo.interfaces.scripted import ScriptedInterface
    from convo.models.mock import MockModel
    from convo.testing.server import OpenAIServer

# (object made by a fixture, fixture name, whether its script must be used up)
_Scripted = tuple[Any, str, bool]
_SCRIPTED = pytest.StashKey[list[_Scripted]]()


def _remember(request: pytest.FixtureRequest, obj: Any, fixture: str, check: bool) -> None:
    request.node.stash.setdefault(_SCRIPTED, []).append((obj, fixture, check))


@pytest.fixture
def mock_model(request: pytest.FixtureRequest) -> Callable[..., MockModel]:
    """A factory: ``mock_model(replies, **kw) -> MockModel``.

    The test fails if a scripted reply is left unused when it ends; pass
    ``check_complete=False`` to allow that.
    """
    from convo.models.mock import MockModel

    def make(replies: Any = (), *, check_complete: bool = True, **kw: Any) -> MockModel:
        model = MockModel(replies, **kw)
        _remember(request, model, "mock_model", check_complete)
        return model

    return make


@pytest.fixture
def scripted_user(request: pytest.FixtureRequest) -> Callable[..., ScriptedInterface]:
    """A factory: ``scripted_user(replies, approvals=()) -> ScriptedInterface``.

    Running out of replies ends a run with ``stopped``; replies left unused fail the test,
    unless made with ``check_complete=False``.
    """
    from convo.interfaces.scripted import ScriptedInterface

    def make(replies: Any = (), *, approvals: Any = (),
             check_complete: bool = True) -> ScriptedInterface:
        if isinstance(replies, str):
            replies = [replies]
        user = ScriptedInterface(replies, approvals=approvals)
        _remember(request, user, "scripted_user", check_complete)
        return user

    return make


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started fake OpenAI server with an empty script; ``.add(...)`` replies to it."""
    from convo.testing.server import OpenAIServer

    with OpenAIServer() as server:
        yield server


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        result = yield
    except BaseException as exc:
        scripted = item.stash.get(_SCRIPTED, None)
        if scripted and not isinstance(exc, pytest.skip.Exception):
            from convo.testing.assertions import describe_scripts

            item.add_report_section("call", "convo scripts", describe_scripts(scripted))
        raise
    scripted = item.stash.get(_SCRIPTED, None)
    if scripted:
        from convo.testing.assertions import unused_script_report

        report = unused_script_report(scripted)
        if report:
            pytest.fail(report, pytrace=False)
    return result
