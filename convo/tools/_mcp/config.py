"""``MCPServer.from_config``: the common ``{"mcpServers": {name: {...}}}`` file.

An entry is ``{"command", "args"?, "env"?, "cwd"?}`` (stdio) or ``{"url", "headers"?}``
(Streamable HTTP); ``"type"`` may say ``"stdio"``, ``"http"`` or ``"streamable-http"``. convo
also reads ``prefix``, ``include``, ``exclude``, ``timeout``, ``max_result_bytes`` and
``needs_approval`` (a bool) in an entry. Mistakes name the file and the entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..._errors import DefinitionError

_OPTIONS: Final = ("prefix", "include", "exclude", "timeout", "max_result_bytes",
                   "needs_approval")
_STDIO: Final = ("command", "args", "env", "cwd")
_HTTP: Final = ("url", "headers")


def servers_from_config(config: Any, make: Any) -> list[Any]:
    """The servers of a config (a path or a mapping), each made with ``make.http(...)`` or
    ``make.stdio(...)`` (``MCPServer`` passes itself)."""
    where = "the MCP config"
    if isinstance(config, str | os.PathLike):
        where = str(config)
        try:
            config = json.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as exc:
            raise DefinitionError(f"MCP config {where}: cannot be read ({exc})") from exc
        except ValueError as exc:
            raise DefinitionError(f"MCP config {where}: not valid JSON ({exc})") from exc
    if not isinstance(config, Mapping) or not isinstance(config.get("mcpServers"), Mapping):
        raise DefinitionError(f'{where}: expected an object with "mcpServers": {{name: '
                              f'{{"command": ...}} or {{"url": ...}}}}, got {config!r:.200}')
    return [_server(make, where, name, entry) for name, entry in config["mcpServers"].items()
            if not (isinstance(entry, Mapping) and entry.get("disabled") is True)]


def _server(make: Any, where: str, name: str, entry: Any) -> Any:
    here = f"{where}: mcpServers[{name!r}]"
    if not isinstance(entry, Mapping):
        raise DefinitionError(f"{here}: expected an object, got {entry!r}")
    kind = entry.get("type") or entry.get("transport")
    known = (*_OPTIONS, "type", "transport", "disabled",
             *(_HTTP if "url" in entry else _STDIO))
    unknown = sorted(set(entry) - set(known))
    if unknown:
        raise DefinitionError(f"{here}: unknown key(s) {', '.join(map(repr, unknown))}; "
                              f"expected some of {', '.join(known)}")
    options = {k: entry[k] for k in _OPTIONS if k in entry}
    try:
        if "url" in entry and kind in (None, "http", "streamable-http", "streamable_http"):
            return make.http(entry["url"], headers=entry.get("headers"), name=name, **options)
        if "command" in entry and kind in (None, "stdio"):
            return make.stdio(entry["command"], entry.get("args") or (),
                              env=entry.get("env"), cwd=entry.get("cwd"), name=name, **options)
    except DefinitionError as exc:
        raise DefinitionError(f"{here}: {exc}") from exc
    raise DefinitionError(f'{here}: expected "command" (stdio) or "url" (Streamable HTTP)'
                          f"{'' if kind is None else f', and type {kind!r} is not supported'}")
