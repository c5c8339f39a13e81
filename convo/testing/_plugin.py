"""The convo pytest plugin (registered through the ``pytest11`` entry point).

Fixtures: ``mock_model`` and ``scripted_user`` (factories whose scripts must be used up by the
end of the test, unless made with ``check_complete=False``), ``openai_server`` (a started
fake OpenAI server, whose script must be used up too unless its ``check_complete`` is set to
``False``), ``anthropic_server`` and ``gemini_server`` (the same for the Messages API and the
Gemini API), ``simulated_user`` (a factory of ``SimulatedUser``) and
``conversation_snapshot`` (compares a conversation with the test's snapshot file). The option
``--convo-update-snapshots`` rewrites snapshot files instead of comparing; the ini option
``convo_snapshot_dir`` (default ``tests/snapshots``, under the rootdir) says where they live.
``-p no:convo`` turns the plugin off.

Every pytest run in a project that has convo installed imports this module, so it imports
nothing from convo at module level: the fixtures import what they need when they are used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from convo._interfaces.scripted import ScriptedInterface
    from convo._session import Session
    from convo.models._mock import MockModel
    from convo.testing._server import AnthropicServer, GeminiServer, OpenAIServer
    from convo.testing._simulated_user import SimulatedUser

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
    from convo.models._mock import MockModel

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
    from convo._interfaces.scripted import ScriptedInterface

    def make(replies: Any = (), *, approvals: Any = (),
             check_complete: bool = True) -> ScriptedInterface:
        if isinstance(replies, str):
            replies = [replies]
        user = ScriptedInterface(replies, approvals=approvals)
        _remember(request, user, "scripted_user", check_complete)
        return user

    return make


@pytest.fixture
def openai_server(request: pytest.FixtureRequest) -> Iterator[OpenAIServer]:
    """A started fake OpenAI server with an empty script; ``.add(...)`` replies to it.

    The test fails if a scripted reply is left unused when it ends; set
    ``openai_server.check_complete = False`` to allow that.
    """
    from convo.testing._server import OpenAIServer

    with OpenAIServer() as server:
        _remember(request, server, "openai_server", True)
        yield server


@pytest.fixture
def anthropic_server(request: pytest.FixtureRequest) -> Iterator[AnthropicServer]:
    """A started fake Anthropic (Messages API) server with an empty script, like
    ``openai_server``: its script must be used up unless ``check_complete`` is ``False``."""
    from convo.testing._server import AnthropicServer

    with AnthropicServer() as server:
        _remember(request, server, "anthropic_server", True)
        yield server


@pytest.fixture
def gemini_server(request: pytest.FixtureRequest) -> Iterator[GeminiServer]:
    """A started fake Gemini API server with an empty script, like ``openai_server``: its
    script must be used up unless ``check_complete`` is ``False``."""
    from convo.testing._server import GeminiServer

    with GeminiServer() as server:
        _remember(request, server, "gemini_server", True)
        yield server


@pytest.fixture
def simulated_user(request: pytest.FixtureRequest) -> Callable[..., SimulatedUser]:
    """A factory: ``simulated_user(model, *, persona, goal, max_turns=10, stop_when=None)``.

    ``model`` is any convo model, or a list of replies (a ``MockModel`` is made of them,
    whose replies must all be used unless ``check_complete=False``).
    """
    from convo.testing._simulated_user import SimulatedUser

    def make(model: Any, *, persona: str, goal: str, max_turns: int = 10,
             stop_when: Callable[[Session], bool] | None = None,
             check_complete: bool = True) -> SimulatedUser:
        if not callable(getattr(model, "complete", None)):
            from convo.models._mock import MockModel

            model = MockModel([model] if isinstance(model, str) else list(model))
            _remember(request, model, "simulated_user", check_complete)
        return SimulatedUser(model, persona=persona, goal=goal, max_turns=max_turns,
                             stop_when=stop_when)

    return make


@pytest.fixture
def conversation_snapshot(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``conversation_snapshot(session, name=None, **kw)``: ``assert_matches_snapshot`` with
    the name defaulting to ``<test module>/<test name>`` (``-2``, ``-3``... for later calls in
    the same test)."""
    import re

    from convo.testing._snapshots import assert_matches_snapshot

    module = request.node.path.stem if getattr(request.node, "path", None) else "tests"
    test = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
    base = f"{module}/{test}"
    count = 0

    def check(session: Any, name: str | None = None, **kw: Any) -> None:
        __tracebackhide__ = True
        nonlocal count
        if name is None:
            count += 1
            name = base if count == 1 else f"{base}-{count}"
        assert_matches_snapshot(session, name, **kw)

    return check


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("convo")
    group.addoption("--convo-update-snapshots", action="store_true", default=False,
                    help="write convo conversation snapshots instead of comparing them")
    parser.addini("convo_snapshot_dir", "where convo conversation snapshots live, relative "
                  "to the rootdir", default="tests/snapshots")


class SnapshotSettings:
    """Where snapshots live and whether this run rewrites them; read by
    ``convo.testing._snapshots`` (kept here, so that configuring pytest imports no convo)."""

    def __init__(self, directory: Path, update: bool) -> None:
        self.directory = directory
        self.update = update
        self.written: list[Path] = []


SNAPSHOTS: list[SnapshotSettings] = []  # a stack: pytester runs pytest inside pytest


def pytest_configure(config: pytest.Config) -> None:
    directory = config.rootpath / str(config.getini("convo_snapshot_dir"))
    SNAPSHOTS.append(SnapshotSettings(directory,
                                      bool(config.getoption("convo_update_snapshots"))))


def pytest_unconfigure(config: pytest.Config) -> None:
    if SNAPSHOTS:
        SNAPSHOTS.pop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    written = SNAPSHOTS[-1].written if SNAPSHOTS else []
    if written:
        terminalreporter.write_line(f"convo: {len(written)} conversation snapshot"
                                    f"{'s' * (len(written) != 1)} written:")
        for path in written:
            terminalreporter.write_line(f"  {path}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        result = yield
    except BaseException as exc:
        scripted = item.stash.get(_SCRIPTED, None)
        if scripted and not isinstance(exc, pytest.skip.Exception):
            from convo.testing._script_reports import describe_scripts

            item.add_report_section("call", "convo scripts", describe_scripts(scripted))
        raise
    scripted = item.stash.get(_SCRIPTED, None)
    if scripted:
        from convo.testing._script_reports import unused_script_report

        report = unused_script_report(scripted)
        if report:
            pytest.fail(report, pytrace=False)
    return result
