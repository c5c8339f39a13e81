"""Running scenarios: each run under ``arun``, checked, judged, and gathered into results.

``aevaluate_all`` runs every repeat of every scenario concurrently (at most ``concurrency`` at
once); ``evaluate`` / ``aevaluate`` run one scenario, for pytest. A ``MockModel`` is a script
for one run: each run gets a fresh copy of it (the bot's, the user's and the judge's), so
repeats and concurrent runs never share a script. Other models are shared.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..._interfaces.scripted import ScriptedInterface
from ..._runner import Runner
from ..._session import Session
from ...models._base import Model, SyncModel
from ...models._mock import MockModel
from .._simulated_user import SimulatedUser
from .cassette import Cassette, CassetteMiss, model_label
from .checks import Failure, check_run
from .judge import judge
from .result import EvalResult, RunResult
from .scenario import Scenario, ScenarioError

NO_JUDGE = ("no judge model: give checks.judge.model in the scenario, --model to convo eval "
            "(judge_model= to evaluate), or define judge_model in the bot file")


def fresh(model: Any) -> Any:
    """A model for one run: a ``MockModel`` copied (a script is used up), others as they are."""
    if isinstance(model, MockModel):
        return MockModel(list(model.replies), repeat_last=model.repeat_last)
    return model


def openai_model(name: str) -> Model:
    """A model named in a scenario: ``PREFIX:NAME`` (``convo.models.resolve``), else an
    OpenAI-compatible model (``OPENAI_BASE_URL``)."""
    from ...models._providers import resolve

    return resolve(name)


@attrs.frozen(kw_only=True)
class Setup:
    """What every run of an evaluation shares: the bot, the models, the cassette."""

    template: Any
    model: Any
    judge_model: Any = None
    user_model: Any = None
    cassette: Cassette | None = None
    state: Mapping[str, Any] = attrs.field(factory=dict)
    runner_options: Mapping[str, Any] = attrs.field(factory=dict)  # limits, context, ...
    named: Callable[[str], Model] = openai_model

    @property
    def record_bot(self) -> bool:
        """The bot's calls go on the cassette when it runs on a real model (not a test one)."""
        return not isinstance(self.model, SyncModel)

    def role_model(self, run: str, role: str, model: Any) -> Any:
        """The model of ``role`` in one run: named ones built lazily, all through the cassette."""
        if isinstance(model, str):  # built only when a call is not on the cassette
            return (self.cassette.model(run, role, functools.partial(self.named, model),
                                        label=model) if self.cassette else self.named(model))
        model = fresh(model)
        return self.cassette.model(run, role, model) if self.cassette else model

    def user_interface(self, scenario: Scenario, run: str) -> Any:
        if scenario.user is not None:
            return ScriptedInterface(scenario.user, approvals=scenario.approvals)
        sim = scenario.simulated
        assert sim is not None
        model = self.role_model(run, "user", sim.model or self.user_model)
        user = SimulatedUser(model, persona=sim.persona, goal=sim.goal,
                             max_turns=sim.max_turns)
        return _Approving(user, ScriptedInterface((), approvals=scenario.approvals))

    def check(self, scenario: Scenario) -> None:
        """Fail before any run when a simulated user has no model to play it."""
        sim = scenario.simulated
        if sim is not None and sim.model is None and self.user_model is None:
            raise ScenarioError(
                f"scenario {scenario.name!r} has a simulated user, but no model plays it: "
                "give simulated.model, --model to convo eval (user_model= to evaluate), or "
                "define user_model in the bot file")


class _Approving:
    """A simulated user whose tool-call approvals come from the scenario's ``approvals``."""

    def __init__(self, user: SimulatedUser, approver: ScriptedInterface) -> None:
        self.user, self.approver = user, approver
        self.ask, self.aask, self.approve = user.ask, user.aask, approver.approve


async def _judged(setup: Setup, scenario: Scenario, run: str, session: Session
                  ) -> list[Failure]:
    spec = scenario.checks.judge
    if spec is None:
        return []
    chosen = spec.model or setup.judge_model
    if chosen is None:
        return [("judge", NO_JUDGE)]
    try:
        passed, reason = await judge(setup.role_model(run, "judge", chosen), spec.rubric,
                                     session)
    except CassetteMiss as exc:
        return [("cassette", str(exc))]
    except Exception as exc:  # a judge that cannot answer fails the check, not the eval
        return [("judge", f"the judge model {model_label(chosen)!r} failed: "
                          f"{type(exc).__name__}: {exc}")]
    return [] if passed else [("judge", reason)]


async def run_once(setup: Setup, scenario: Scenario, index: int) -> RunResult:
    """One run of ``scenario``: the conversation, then its checks."""
    run = f"{scenario.name} #{index}"
    bot = fresh(setup.model)
    if setup.cassette is not None and setup.record_bot:
        bot = setup.cassette.model(run, "bot", bot)
    runner = Runner(bot, setup.template, setup.user_interface(scenario, run),
                    raise_errors=False, **setup.runner_options)
    session = await runner.arun(Session(state={**setup.state, **scenario.state}))
    misses = setup.cassette.misses.get(run, []) if setup.cassette is not None else []
    # A miss cut the run off: its checks would only fail in its wake (the status an error
    # repeating the miss, tools not called, no reply), so the cassette line alone says why.
    failures: list[Failure] = [("cassette", miss) for miss in misses]
    if not misses:
        failures += check_run(scenario.checks, session)
        if scenario.checks.judge is not None:
            failures += await _judged(setup, scenario, run, session)
    return RunResult(scenario=scenario.name, index=index, failures=tuple(failures),
                     session=session)


async def aevaluate_all(setup: Setup, scenarios: list[Scenario], *, repeat: int | None = None,
                        concurrency: int = 8,
                        on_run: Callable[[RunResult], None] | None = None) -> list[EvalResult]:
    """Every run of every scenario (``repeat`` overrides each scenario's), at most
    ``concurrency`` at once; ``on_run`` hears of each run as it ends."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    for scenario in scenarios:
        setup.check(scenario)
    jobs = [(s, i) for s in scenarios for i in range(1, (repeat or s.repeat) + 1)]
    gate = asyncio.Semaphore(concurrency) if concurrency < len(jobs) else None

    async def one(scenario: Scenario, index: int) -> RunResult:
        if gate is None:
            result = await run_once(setup, scenario, index)
        else:
            async with gate:
                result = await run_once(setup, scenario, index)
        if on_run is not None:
            on_run(result)
        return result

    try:
        if gate is None and on_run is None:  # the common offline case: nothing to wrap
            runs = await asyncio.gather(*(run_once(setup, s, i) for s, i in jobs))
        else:
            runs = await asyncio.gather(*(one(s, i) for s, i in jobs))
    finally:
        if setup.cassette is not None:
            setup.cassette.save()
    by_name: dict[str, list[RunResult]] = {s.name: [] for s in scenarios}
    for result in runs:
        by_name[result.scenario].append(result)
    return [EvalResult(scenario=s, runs=tuple(by_name[s.name])) for s in scenarios]


def _setup(template: Any, model: Any, *, judge_model: Any, user_model: Any,
           cassette: Cassette | str | os.PathLike[str] | None,
           state: Mapping[str, Any] | None, runner_options: Mapping[str, Any]) -> Setup:
    if cassette is not None and not isinstance(cassette, Cassette):
        cassette = Cassette(cassette)
    return Setup(template=template, model=model, judge_model=judge_model,
                 user_model=user_model, cassette=cassette, state=dict(state or {}),
                 runner_options=dict(runner_options))


async def aevaluate(template: Any, model: Any, scenario: Scenario, *, repeat: int | None = None,
                    judge_model: Any = None, user_model: Any = None,
                    cassette: Cassette | str | os.PathLike[str] | None = None,
                    concurrency: int = 8, state: Mapping[str, Any] | None = None,
                    **runner_options: Any) -> EvalResult:
    """``evaluate`` on the running event loop."""
    setup = _setup(template, model, judge_model=judge_model, user_model=user_model,
                   cassette=cassette, state=state, runner_options=runner_options)
    [result] = await aevaluate_all(setup, [scenario], repeat=repeat, concurrency=concurrency)
    return result


def evaluate(template: Any, model: Any, scenario: Scenario, *, repeat: int | None = None,
             judge_model: Any = None, user_model: Any = None,
             cassette: Cassette | str | os.PathLike[str] | None = None,
             concurrency: int = 8, state: Mapping[str, Any] | None = None,
             **runner_options: Any) -> EvalResult:
    """Run ``scenario`` against ``template`` on ``model`` ``repeat`` times (default: the
    scenario's ``repeat``) and check every run.

    ``judge_model`` / ``user_model`` (a convo model, or a model name) grade the ``judge``
    check and play a ``simulated`` user when the scenario names no model of its own;
    ``cassette`` (a path or a ``Cassette``) records and replays their calls, and the bot's
    when ``model`` is a real one. ``state`` is the starting state (the scenario's is laid over
    it); other keyword arguments (``limits``, ``context``, ``max_messages``) go to the
    ``Runner``. Inside a running event loop, ``await aevaluate(...)``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(
            template, model, scenario, repeat=repeat, judge_model=judge_model,
            user_model=user_model, cassette=cassette, concurrency=concurrency, state=state,
            **runner_options))
    raise RuntimeError("evaluate() was called inside a running event loop: use "
                       "`await aevaluate(...)` there")
