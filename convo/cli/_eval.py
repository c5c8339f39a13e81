"""``convo eval BOT_FILE SCENARIOS.yaml``: every scenario run N times against a bot, checked,
and shown as a table of pass rates (API.md §21; docs/eval.md).

Exit codes: 0 when every scenario reaches its ``min_pass_rate`` (and the ``--baseline``'s pass
rate), 1 when one does not (or ``--frozen`` met a call the cassette lacks), 2 for a mistake on
the command line, in the bot file or in the scenario file (said in one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from .._botfile import (
    SMOKE,
    UsageProblem,
    bot_bounds,
    choose_model,
    find_template,
    info,
    load_file,
    openai_model,
    provider_model,
    smoke_model,
    split_target,
)

if TYPE_CHECKING:  # the evaluation (its runner, its cassette) is imported when eval runs,
    # not when the parsers are built: `convo serve --help` needs none of it
    from ..testing._evaluation.cassette import Cassette
    from ..testing._evaluation.result import RunResult
    from ..testing._evaluation.scenario import Scenario

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``convo eval``: registered with the ``convo`` command (convo/cli.py)."""
    parser = sub.add_parser(
        "eval", parents=[common], help="run scenarios against a bot and show pass rates",
        description="Run each scenario of a YAML file against the template NAME (default: "
                    "template) of a bot file, check every run, and print the pass rates.")
    parser.add_argument("target", metavar="BOT_FILE[:NAME]", help="the bot's Python file")
    parser.add_argument("scenarios", metavar="SCENARIOS.yaml", help="the scenario file")
    parser.add_argument("--model", help="the bot's model, and the judge's when a scenario "
                                        "names none: NAME (OpenAI's; default: gpt-4o-mini) "
                                        "or PREFIX:NAME (openai:, openai-responses:, "
                                        "anthropic:, gemini:, or a prefix the bot file "
                                        "registers); smoke: an offline stand-in for the bot, "
                                        "no key needed")
    parser.add_argument("--base-url", metavar="URL",
                        help="an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    parser.add_argument("--mock", action="store_true",
                        help="run the bot on the file's mock_model even when a key is set")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="run each scenario N times (overrides its repeat)")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N",
                        help="runs at once (default: 8)")
    parser.add_argument("--junit", metavar="PATH", help="write JUnit XML here, for CI")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON here")
    parser.add_argument("--baseline", metavar="PATH",
                        help="a --json file of an earlier run: fail on a lower pass rate")
    parser.add_argument("--cassette", metavar="PATH",
                        help="record model calls here on the first run, replay them after")
    parser.add_argument("--frozen", action="store_true",
                        help="with --cassette: a call it lacks is an error (for CI)")
    parser.set_defaults(main=main)


def _checked_options(args: argparse.Namespace) -> None:
    if args.repeat is not None and args.repeat < 1:
        raise UsageProblem(f"--repeat must be at least 1, got {args.repeat}")
    if args.concurrency < 1:
        raise UsageProblem(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.frozen and not args.cassette:
        raise UsageProblem("--frozen needs --cassette PATH: the cassette to replay")


def _named(args: argparse.Namespace) -> Any:
    """How a model named in a scenario (or by --model: ``PREFIX:NAME`` too) is built: only
    when it is called."""
    def build(name: str) -> Any:
        from ..models._providers import split

        if name == SMOKE:
            return smoke_model(args)[0]
        prefix, _ = split(name)
        if prefix is None or prefix in ("openai", "openai-responses"):
            named = argparse.Namespace(**{**vars(args), "model": name})
            return openai_model(named, args.base_url)[0]
        return provider_model(args, name, base_url=args.base_url)[0]

    return build


def _role_models(args: argparse.Namespace, module: ModuleType, bot: Any, live: bool
                 ) -> tuple[Any, Any]:
    """The judge's model (``--model``, else the file's ``judge_model``) and the simulated
    user's (live: ``--model`` or the bot's; offline: the file's ``user_model``, else
    ``--model``)."""
    if args.model == SMOKE:  # the stand-in plays the bot; it cannot judge
        return getattr(module, "judge_model", None), getattr(module, "user_model", None) or bot
    judge = args.model or getattr(module, "judge_model", None)
    if live:
        user = args.model or bot
    else:
        user = getattr(module, "user_model", None) or args.model
    return judge, user


def _setup(args: argparse.Namespace) -> tuple[Any, list[Scenario]]:
    from ..testing._evaluation.cassette import Cassette
    from ..testing._evaluation.evaluate import Setup
    from ..testing._evaluation.scenario_file import load_scenarios

    scenarios = load_scenarios(args.scenarios)
    path, name = split_target(args.target)
    module = load_file(path)
    template = find_template(module, path, name)
    args.no_stream = True  # nobody watches the replies arrive
    bot, model_name = choose_model(args, module, path)
    judge, user = _role_models(args, module, bot, model_name is not None)
    try:
        cassette = Cassette(args.cassette, frozen=args.frozen) if args.cassette else None
    except ValueError as exc:
        raise UsageProblem(str(exc)) from exc
    state = getattr(module, "state", None) or {}
    setup = Setup(template=template, model=bot, judge_model=judge, user_model=user,
                  cassette=cassette, state=dict(state), runner_options=bot_bounds(module, path),
                  named=_named(args))
    return setup, scenarios


class _Progress:
    """A progress bar on a terminal's stderr while the runs go (nothing when piped)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.done, self.failed, self.stream = total, 0, 0, stream
        self.shown = stream.isatty()

    def __call__(self, result: RunResult) -> None:
        self.done += 1
        self.failed += not result.passed
        if self.shown:
            filled = self.done * 30 // max(self.total, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/"
                              f"{self.total} runs, {self.failed} failed")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def main(args: argparse.Namespace) -> int:
    """Run ``convo eval``; returns the exit code."""
    import asyncio

    from ..testing._evaluation.evaluate import aevaluate_all
    from ..testing._evaluation.report import (
        read_baseline,
        summary,
        table,
        verdicts,
        write_json,
        write_junit,
    )
    from ..testing._evaluation.scenario import ScenarioError

    _checked_options(args)
    try:
        setup, scenarios = _setup(args)
        baseline = read_baseline(args.baseline) if args.baseline else None
        runs = sum(args.repeat or s.repeat for s in scenarios)
        progress = _Progress(runs, sys.stderr)
        try:
            results = asyncio.run(aevaluate_all(setup, scenarios, repeat=args.repeat,
                                                concurrency=args.concurrency, on_run=progress))
        finally:
            progress.close()
    except ScenarioError as exc:
        raise UsageProblem(str(exc)) from exc
    why = verdicts(results, baseline)
    print(table(results, why))
    lines = [line for result in results for line in result.lines()]
    if lines:
        print("\n" + "\n".join(lines))
    print("\n" + summary(results, why))
    if args.json:
        write_json(args.json, results)
    if args.junit:
        write_junit(args.junit, results, why, suite=Path(args.scenarios).stem)
    return _cassette_verdict(setup.cassette) or (EXIT_FAILED if why else EXIT_OK)


def _cassette_verdict(cassette: Cassette | None) -> int:
    if cassette is None:
        return EXIT_OK
    if cassette.misses:
        count = sum(len(m) for m in cassette.misses.values())
        print(f"convo: error: --frozen: {count} model call{'s' * (count != 1)} not in the "
              f"cassette {cassette.path} (see the cassette lines above)", file=sys.stderr)
        return EXIT_FAILED
    info(cassette.summary())
    return EXIT_OK
