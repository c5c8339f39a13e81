"""``convo run --demo``: the bot file's demo_input and demo_approvals answer, each approval is
shown, and the screen says why the demo stops when either runs out (not a silent "stopped")."""

from __future__ import annotations

from pathlib import Path

from terminal_harness import convo_cmd, env

__all__ = ["env"]  # the fixture

BOT = '''
from convo import FinishTool, LoopTemplate, MockModel, ToolingTemplate, UserTemplate, tool


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


template = LoopTemplate([UserTemplate(), ToolingTemplate([refund, FinishTool()])])
mock_model = MockModel(["{refund(order='A1')}", "Done. {finish()}", "{refund(order='B2')}",
                        "Kept. {finish()}"])
demo_input = ["refund A1", "refund B2"]
'''
STARTED = "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"
FIRST = ('You: refund A1\n  → refund({"order": "A1"})\n'
         'Approve refund({"order": "A1"})? y (demo_approvals)\n'
         "  ↳ refund: refunded A1\nAssistant: Done.\n"
         'You: refund B2\n  → refund({"order": "B2"})\n')
STOPPED = "--- conversation stopped: the user quit or the run was cancelled"


def _bot(tmp_path: Path, approvals: str | None) -> str:
    path = tmp_path / "bot.py"
    path.write_text(BOT + (f"demo_approvals = {approvals}\n" if approvals is not None else ""))
    return str(path)


def test_running_out_of_demo_approvals_is_said(env: dict[str, str], tmp_path: Path) -> None:
    bot = _bot(tmp_path, '["y"]')
    result = convo_cmd("run", bot, "--demo", "--no-log", env=env)
    assert result.returncode == 0
    assert result.stdout == (
        STARTED + FIRST + 'Approve refund({"order": "B2"})?\n'
        f"--- demo: {bot}'s demo_approvals ran out (1 answer) at this call: the demo stops "
        "here; add an answer to demo_approvals, or run without --demo to answer yourself ---\n"
        + STOPPED + " (7 messages, 3 model calls) ---\n")


def test_a_file_without_demo_approvals_says_so(env: dict[str, str], tmp_path: Path) -> None:
    bot = _bot(tmp_path, None)
    result = convo_cmd("run", bot, "--demo", "--no-log", env=env)
    assert result.returncode == 0
    assert result.stdout.endswith(
        'You: refund A1\n  → refund({"order": "A1"})\nApprove refund({"order": "A1"})?\n'
        f"--- demo: {bot} defines no demo_approvals to answer this call: the demo stops "
        "here; add an answer to demo_approvals, or run without --demo to answer yourself ---\n"
        + STOPPED + " (2 messages, 1 model call) ---\n")


def test_each_demo_approval_is_shown_and_running_out_of_input_is_said(
        env: dict[str, str], tmp_path: Path) -> None:
    bot = _bot(tmp_path, '[True, "no, it was a gift"]')
    result = convo_cmd("run", bot, "--demo", "--no-log", env=env)
    assert result.returncode == 0
    assert result.stdout == (
        STARTED + FIRST + 'Approve refund({"order": "B2"})? no, it was a gift '
        "(demo_approvals)\n  ↳ refund: Rejected by the user: no, it was a gift\n"
        "Assistant: Kept.\n"
        f"--- demo: {bot}'s demo_input is used up (2 lines): the demo stops here ---\n"
        + STOPPED + " (10 messages, 4 model calls) ---\n")


def test_demo_approvals_of_the_wrong_type_are_refused(env: dict[str, str],
                                                      tmp_path: Path) -> None:
    bot = _bot(tmp_path, '"y"')
    result = convo_cmd("run", bot, "--demo", "--no-log", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.endswith(
        f'convo: error: --demo: {bot}: demo_approvals must be a list of answers ("y", "n", a '
        "reason to reject, True/False), got str\n")
