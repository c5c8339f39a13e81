"""``convo test FILE[:NAME]``: a bot file tried against a simulated user, with no typing.

The bot runs on its model as ``convo run`` chooses it (OpenAI's when ``OPENAI_API_KEY`` or a
base URL is set, else the file's ``mock_model``). The user is a ``SimulatedUser`` with the
persona and goal of ``--user "PERSONA|GOAL"``, played by the same live model, or offline by
the file's ``user_model`` or else a ``MockModel`` of its ``demo_input`` lines followed by
``[DONE]``. The conversation is printed as it happens, then how it ended.

Exit codes: 0 when the simulated user said it was done or the bot ended the conversation,
1 when the run ended with ``error``, 2 for a mistake on the command line or in the file,
3 when the user did not reach its goal (``--turns`` ran out, or a limit of the run).
"""

from __future__ import annotations

import argparse
import traceback
from types import ModuleType
from typing import Any, Final

from .._botfile import (
    MODEL_HELP,
    UsageProblem,
    bot_bounds,
    choose_model,
    find_template,
    load_file,
    split_target,
)

EXIT_OK, EXIT_RUN_ERROR, EXIT_NOT_REACHED = 0, 1, 3
DEFAULT_PERSONA: Final = "a curious first-time user"
DEFAULT_GOAL: Final = "find out what this assistant can do for you, then say goodbye"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``convo test``: registered with the ``convo`` command (convo/cli.py)."""
    parser = sub.add_parser(
        "test", parents=[common], help="try a bot file against a simulated user",
        description="Run the template NAME (default: template) from a Python file against a "
                    "simulated user with a persona and a goal, and show the conversation.")
    add_arguments(parser)
    parser.set_defaults(main=main)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``convo test``."""
    parser.add_argument("target", metavar="FILE[:NAME]",
                        help="a Python file and the name of the template in it")
    parser.add_argument("--user", metavar='"PERSONA|GOAL"',
                        help=f"who the simulated user is and what it wants (default: "
                             f"{DEFAULT_PERSONA!r} | {DEFAULT_GOAL!r})")
    parser.add_argument("--turns", type=int, default=10, metavar="N",
                        help="the most messages the simulated user writes (default: 10)")
    parser.add_argument("--model", help=MODEL_HELP)
    parser.add_argument("--base-url", metavar="URL",
                        help="an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    parser.add_argument("--mock", action="store_true",
                        help="use the file's mock_model even when an API key is set")
    parser.add_argument("--no-stream", action="store_true", help="do not stream replies")
    parser.add_argument("--max-messages", type=int, default=1000, metavar="N",
                        help="stop the run after N new messages (default: 1000)")


def persona_and_goal(text: str | None) -> tuple[str, str]:
    """``"PERSONA|GOAL"`` split; the defaults when not given."""
    if text is None:
        return DEFAULT_PERSONA, DEFAULT_GOAL
    persona, sep, goal = text.partition("|")
    if not sep or not persona.strip() or not goal.strip():
        raise UsageProblem(f'--user expects "PERSONA|GOAL", e.g. --user "a busy parent|order '
                           f'two lattes to take away"; got {text!r}')
    return persona.strip(), goal.strip()


def _user_model(module: ModuleType, path: str, bot_model: Any, offline: bool) -> Any:
    if not offline:
        return bot_model
    own = getattr(module, "user_model", None)
    if own is not None:
        if not callable(getattr(own, "complete", None)):
            raise UsageProblem(f"{path}: user_model is a {type(own).__name__}, not a model")
        return own
    demo = getattr(module, "demo_input", None)
    if not isinstance(demo, list | tuple):
        raise UsageProblem(f"offline, the simulated user needs a model too: define user_model "
                           f"(a model that plays the user) or demo_input (lines the user "
                           f"says) in {path}, or set OPENAI_API_KEY")
    from ..models._mock import MockModel
    from ..testing._simulated_user import DONE_MARKER

    return MockModel([*demo, DONE_MARKER])


def main(args: argparse.Namespace) -> int:
    """Run ``convo test``; returns the exit code."""
    from .._runner import Runner
    from .._session import RunStatus, Session
    from ..templates._tree import termination_tools
    from ..testing._simulated_user import SimulatedUser

    if args.turns < 1:
        raise UsageProblem(f"--turns must be at least 1, got {args.turns}")
    persona, goal = persona_and_goal(args.user)
    path, name = split_target(args.target)
    module = load_file(path)
    template = find_template(module, path, name)
    bounds = bot_bounds(module, path)
    bot_model, model_name = choose_model(args, module, path)
    user = SimulatedUser(_user_model(module, path, bot_model, model_name is None),
                         persona=persona, goal=goal, max_turns=args.turns)
    printer = _printer()
    printer.hidden_tools.update(termination_tools(template))  # as the terminal hides them
    printer.note(f"convo test: {persona!r} wants to {goal!r} (at most {args.turns} turns)"
                 + (f"; {model_name}" if model_name else ""))
    state = getattr(module, "state", None) or {}
    runner = Runner(bot_model, template, user, on_event=printer, raise_errors=args.debug,
                    max_messages=args.max_messages, **bounds)
    try:
        session = runner.run(Session(state=dict(state)))
    except Exception:
        traceback.print_exc()  # only with --debug: raise_errors is off otherwise
        return EXIT_RUN_ERROR
    outcome = session.outcome
    printer.note(f"simulated user: {user.describe_stop()}")
    if outcome is not None and outcome.status == RunStatus.ERROR:
        return EXIT_RUN_ERROR
    ended_by_bot = outcome is not None and outcome.status in (RunStatus.ENDED,
                                                               RunStatus.COMPLETED)
    return EXIT_OK if user.goal_reached or ended_by_bot else EXIT_NOT_REACHED


def _printer() -> Any:
    from .._terminal.printer import ConsolePrinter

    class SimulatedUserPrinter(ConsolePrinter):
        """Shows the user's messages as the simulated user's."""

        def _label(self, role: str) -> str:
            if role == "user":
                return self.paint("User (simulated):", "user") + " "
            return super()._label(role)

    return SimulatedUserPrinter()
