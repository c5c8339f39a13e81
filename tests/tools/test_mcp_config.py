"""MCPServer.from_config and the options' checks: mistakes name the file and the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from convo import DefinitionError, MCPServer


def test_the_common_config_gives_one_server_per_entry(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("""{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "fs-server", "/tmp"], "env": {"A": "1"},
                  "prefix": "fs_", "exclude": ["delete"], "timeout": 3.5},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"},
                "needs_approval": true},
        "off": {"command": "x", "disabled": true}}}""")
    files, web = MCPServer.from_config(path)
    assert (files.name, files.endpoint.command, files.endpoint.args) == (
        "files", "npx", ("-y", "fs-server", "/tmp"))
    assert (files.endpoint.env, files.prefix, files.exclude, files.timeout) == (
        {"A": "1"}, "fs_", frozenset({"delete"}), 3.5)
    assert (web.name, web.endpoint.url, web.endpoint.headers, web.needs_approval) == (
        "web", "http://127.0.0.1:9/mcp", {"Authorization": "Bearer x"}, True)
    assert [s.name for s in MCPServer.from_config({"mcpServers": {}})] == []


@pytest.mark.parametrize(("config", "message"), [
    ({"servers": {}}, 'the MCP config: expected an object with "mcpServers": {name: '
                      '{"command": ...} or {"url": ...}}, got {\'servers\': {}}'),
    ({"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}},
     "the MCP config: mcpServers['a']: expected \"command\" (stdio) or \"url\" (Streamable "
     "HTTP), and type 'sse' is not supported"),
    ({"mcpServers": {"a": {"url": "ftp://h"}}},
     "the MCP config: mcpServers['a']: MCPServer.http: url must start with http:// or "
     "https://, got 'ftp://h'"),
    ({"mcpServers": {"a": {"command": "x", "timeout": 0}}},
     "the MCP config: mcpServers['a']: MCPServer: timeout must be a number of seconds > 0, "
     "got 0"),
    ({"mcpServers": {"a": {"command": "x", "include": "read"}}},
     "the MCP config: mcpServers['a']: MCPServer: include must be a collection of tool "
     "names, got 'read'"),
])
def test_mistakes_name_the_entry(config: dict[str, object], message: str) -> None:
    with pytest.raises(DefinitionError) as info:
        MCPServer.from_config(config)
    assert str(info.value) == message


def test_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{nope")
    with pytest.raises(DefinitionError, match=rf"^MCP config {path}: not valid JSON \("):
        MCPServer.from_config(path)


def test_the_default_name_is_the_commands_file_name_or_the_urls_host() -> None:
    assert MCPServer.stdio("/usr/bin/fs-server").name == "fs-server"
    assert MCPServer.http("https://tools.example.com/mcp").name == "tools.example.com"
    assert MCPServer.stdio("x", name="mine").name == "mine"
