"""``convo chat --mcp FILE`` and ``/tools``, end to end: the real command, piped, against a
real MCP server (stdio) and the fake OpenAI server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from convo.testing import OpenAIServer

SERVERS = str(Path(__file__).parent.parent / "tools" / "mcp_test_servers.py")


def _chat(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(tmp_path), CONVO_HOME=str(tmp_path / "home"), NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "convo", "chat", "--no-log", *args],
                          input=stdin, env=env, capture_output=True, text=True, timeout=90,
                          check=False)


def _config(tmp_path: Path) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "calc": {"command": sys.executable, "args": [SERVERS, "tools"],
                 "include": ["add", "echo"]},
        "broken": {"command": "no-such-mcp-server"},
    }}))
    return str(path)


def test_a_chat_calls_the_tools_of_mcp_servers_and_lists_them(tmp_path: Path) -> None:
    with OpenAIServer(["{add(a=2, b=3)}", "It is 5."]) as server:
        result = _chat(tmp_path, "--base-url", server.base_url, "--mcp", _config(tmp_path),
                       stdin="/tools\n2+3?\n")
        sent = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert result.returncode == 0, result.stderr
    assert sent == ["add", "echo"]
    assert ("2 tools:\n  add (MCP server 'calc'): Add two numbers.\n"
            "  echo (MCP server 'calc'): Say it back.\n") in result.stdout
    assert "  ↳ add: 5\nAssistant: It is 5.\n" in result.stdout
    assert result.stderr.startswith(
        "convo: MCP server 'calc': 2 tools\n"
        "convo: warning: MCP server 'broken' could not start: the command "
        "'no-such-mcp-server' was not found; chatting without its tools\n")


def test_a_config_file_that_is_wrong_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"mcpServers": {"x": {"command": "a", "colour": "red"}}}')
    result = _chat(tmp_path, "--mcp", str(path), stdin="")
    assert result.returncode == 2
    assert (f"--mcp: {path}: mcpServers['x']: unknown key(s) 'colour'; expected some of "
            "prefix, include, exclude, timeout, max_result_bytes, needs_approval, type, "
            "transport, disabled, command, args, env, cwd") in result.stderr


def test_a_bot_file_with_an_mcp_server_runs_and_lists_its_tools(tmp_path: Path) -> None:
    bot = str(Path(__file__).parent.parent.parent / "examples" / "mcp_units_bot.py")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(tmp_path), CONVO_HOME=str(tmp_path / "home"), NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    result = subprocess.run([sys.executable, "-m", "convo", "run", bot, "--no-log"],
                            input="/tools\nA marathon in miles?\n", env=env,
                            capture_output=True, text=True, timeout=90, check=False)
    assert result.returncode == 0, result.stderr
    assert ("2 tools:\n  units_convert (MCP server 'units'): Convert a value between units: "
            "km and mi, kg and lb, C and F.\n"
            "  units_units (MCP server 'units'): The units this server knows.\n"
            ) in result.stdout
    assert "  ↳ units_convert: 42.195 km = 26.22 mi\n" in result.stdout
