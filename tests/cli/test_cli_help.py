"""``convo --help`` explains convo without the docs (an installed user has none), a command's
mistake is said with that command's usage, and docs/cli.md's synopsis is the parser's."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_harness import convo_cmd, env

from convo._parts import DEFAULT_MAX_BYTES
from convo.cli import COMMANDS, _parser

__all__ = ["env"]  # the fixture

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_help_needs_no_docs(env: dict[str, str]) -> None:
    result = convo_cmd("--help", env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert "docs/" not in result.stdout
    assert "convo COMMAND --help" in result.stdout
    assert "/help lists the slash commands" in result.stdout
    commands = _commands()
    assert len(commands) == len(COMMANDS)
    for name in commands:  # each command has its line, and its own help
        assert re.search(rf"\n    {name} +\S.*\n", result.stdout), name
        assert re.search(rf"\n  convo {name} ", result.stdout), f"no example of {name}"
        own = convo_cmd(name, "--help", env=env)
        assert own.returncode == 0 and own.stdout.startswith(f"usage: convo {name} [-h]")
        assert "docs/" not in own.stdout, name


@pytest.mark.parametrize(("name", "given"), [("chat", ()), ("run", ("bot.py",)),
                                            ("serve", ("bot.py",)), ("replay", ("t.jsonl",))])
def test_an_unknown_option_is_said_with_the_commands_usage(env: dict[str, str], name: str,
                                                           given: tuple[str, ...]) -> None:
    result = convo_cmd(name, *given, "--bogus", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"usage: convo {name} [-h] [--debug]")
    assert result.stderr.endswith(f"convo {name}: error: unrecognized arguments: --bogus\n")


def test_an_unknown_option_before_the_command_is_the_top_levels(env: dict[str, str]) -> None:
    result = convo_cmd("--bogus", "chat", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("usage: convo [-h] [--debug] [--version] COMMAND ...\n"
                             "convo: error: unrecognized arguments: --bogus\n")


def _synopsis() -> dict[str, set[str]]:
    """The options docs/cli.md's synopsis gives each command."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    options: dict[str, set[str]] = {}
    command = ""
    for line in block.splitlines():
        if line.startswith("convo "):
            command = line.split()[1]
            options.setdefault(command, set())
        options[command] |= set(re.findall(r"\[(-{1,2}[a-z][a-z-]*)", line))
    return options


def test_the_synopsis_in_docs_is_the_parsers() -> None:
    synopsis = _synopsis()
    for name, parser in _commands().items():
        flags = {max(a.option_strings, key=len) for a in parser._actions
                 if a.option_strings and "--help" not in a.option_strings}
        # the synopsis gives the short form of a few (-m, -s, -c): count either
        written = {f for a in parser._actions for f in a.option_strings
                   if f in synopsis.get(name, set())}
        long_written = {max(a.option_strings, key=len) for a in parser._actions
                        if set(a.option_strings) & written}
        assert (name, sorted(flags - long_written)) == (name, [])
        assert (name, sorted(synopsis[name] - {f for a in parser._actions
                                               for f in a.option_strings})) == (name, [])


def test_the_serve_table_in_docs_lists_every_flag() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## `convo serve FILE[:NAME]`", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ", 1)[0] for line in section.splitlines() if line.startswith("| `")]
    listed = set(re.findall(r"`(-{1,2}[a-z][a-z-]*)", " ".join(rows)))
    flags = {max(a.option_strings, key=len) for a in _commands()["serve"]._actions
             if a.option_strings and "--help" not in a.option_strings}
    assert sorted(flags - listed) == []
    assert sorted(listed - flags) == []


def test_chat_with_a_bot_file_says_to_use_run_in_one_line(env: dict[str, str]) -> None:
    result = convo_cmd("chat", "examples/staffed_support_bot.py", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("convo: error: convo chat takes no bot file: to hold the "
                             "conversation examples/staffed_support_bot.py defines, use convo "
                             "run examples/staffed_support_bot.py\n")



# What a command runs, not what its parser needs: building the parsers (any --help) imports
# none of it, so `convo serve --help` answers without loading the eval cassette and the runner.
NOT_FOR_THE_HELP = ("convo.testing._evaluation.cassette", "convo._runner", "convo._session",
                    "convo.templates", "convo.models", "convo.serve", "convo._temporal",
                    "asyncio", "attrs", "starlette", "uvicorn", "openai", "temporalio", "yaml")

HELPS = """\
import contextlib, io, json, sys
from convo.cli import main
names, loaded = sys.argv[1].split(","), {}
for argv in ([], ["--help"], *([command, "--help"] for command in sys.argv[2:])):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
    loaded[" ".join(argv)] = [name for name in names if name in sys.modules]
print(json.dumps(loaded))
"""


def test_the_help_imports_none_of_what_the_commands_run() -> None:
    commands = sorted(_commands())
    out = subprocess.run([sys.executable, "-c", HELPS, ",".join(NOT_FOR_THE_HELP), *commands],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {" ".join(argv): [] for argv in
                                      ([], ["--help"], *([c, "--help"] for c in commands))}


def test_chats_attachment_limit_is_the_parts_default() -> None:
    # written out in the parser (the parts module is imported only when a chat starts)
    assert _commands()["chat"].get_default("max_attachment_bytes") == DEFAULT_MAX_BYTES
