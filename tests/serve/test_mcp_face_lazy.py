"""The MCP face without its cost or its extra: the `mcp` SDK is the mcp extra's, not the serve
extra's, so `create_app` (all faces, the default) imports none of it; the first signed-in
request to `/mcp` does. Without the SDK every other route serves, `/mcp` answers 501 saying
how to install it, and a choice of faces that names `mcp` is refused at start. Each case
runs in a fresh interpreter (modules already imported by other tests would hide an import),
the SDK blocked there by an import hook as if it were not installed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

TESTS = str(Path(__file__).resolve().parents[1])

MISSING = ('the MCP face (/mcp) needs the mcp package, which is not installed: '
           'pip install -e ".[mcp]" in convo\'s checkout, or '
           'pip install "convo[mcp]" from an index that serves this convo')

BLOCK_MCP = """
import importlib.abc

class NoMCP(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMCP())
"""

SERVE = """
import asyncio
import json
import sys

sys.path.insert(0, TESTS)
{block}
from refund_bot import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import create_app

seen = {{}}
def mcp_loaded():
    return sorted(name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types")
                  or name == "convo.serve._mcp_face")
{body}
print(json.dumps(seen))
"""

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Authorization": "Bearer t"}


def served(body: str, *, block: bool) -> dict[str, Any]:
    """What ``body`` put in ``seen``, run in a fresh interpreter (the SDK blocked if asked)."""
    script = SERVE.format(block=BLOCK_MCP if block else "", body=textwrap.dedent(body))
    done = subprocess.run([sys.executable, "-c", f"TESTS = {TESTS!r}\n{script}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return seen


@pytest.fixture(scope="module")
def without_mcp() -> dict[str, Any]:
    return served("""
        try:
            import mcp
        except ModuleNotFoundError as exc:
            seen["blocked"] = str(exc)
        with TestClient(create_app(TEMPLATE, model())) as client:
            seen["health"] = client.get("/api/health").json()
            made = client.post("/api/conversations", json={})
            said = client.post(f"/api/conversations/{made.json()['id']}/messages",
                               json={"content": "hi"})
            seen["turn"] = [made.status_code, said.status_code,
                            said.json()["added"][-1]["content"]]
            answer = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            seen["mcp"] = [answer.status_code, answer.json()]
            again = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            seen["mcp_again"] = [again.status_code, again.json()["error"]]
        try:
            create_app(TEMPLATE, model(), faces=["native", "mcp"])
        except ValueError as exc:
            seen["chose_mcp"] = str(exc)
        seen["native_only"] = type(create_app(TEMPLATE, model(), faces=["native"])).__name__
        seen["loaded"] = mcp_loaded()
    """.replace("INITIALIZE", repr(INITIALIZE)).replace("MCP_HEADERS", repr(MCP_HEADERS)),
        block=True)


def test_without_the_sdk_every_other_route_serves(without_mcp: dict[str, Any]) -> None:
    assert without_mcp["blocked"] == "No module named 'mcp'"
    assert without_mcp["health"] == {"status": "ok"}
    assert without_mcp["turn"] == [201, 200, "You said 'hi'"]
    assert without_mcp["loaded"] == []


def test_without_the_sdk_mcp_answers_501_saying_how_to_install_it(
        without_mcp: dict[str, Any]) -> None:
    status, body = without_mcp["mcp"]
    assert status == 501
    assert body["error"] == MISSING
    assert without_mcp["mcp_again"] == [501, MISSING]


def test_without_the_sdk_a_choice_naming_mcp_is_refused_at_start(
        without_mcp: dict[str, Any]) -> None:
    assert without_mcp["chose_mcp"] == MISSING
    assert without_mcp["native_only"] == "Starlette"


def test_convo_serve_faces_mcp_without_the_sdk_exits_2_naming_the_extra() -> None:
    script = (f"import sys\n{BLOCK_MCP}\nfrom convo.cli import main\n"
              "sys.exit(main(['serve', '--faces', 'native,mcp', 'bot.py']))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"convo serve: error: argument --faces: {MISSING}"


def test_create_app_imports_no_mcp_until_the_first_signed_in_request_to_mcp() -> None:
    seen = served("""
        app = create_app(TEMPLATE, model(), token="t")
        seen["made"] = mcp_loaded()
        with TestClient(app) as client:
            client.get("/api/health")
            stranger = client.post("/mcp", json=INITIALIZE,
                                   headers={"Accept": "application/json, text/event-stream"})
            seen["stranger"] = [stranger.status_code, mcp_loaded()]
            first = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            seen["first"] = [first.status_code, '"serverInfo"' in first.text]
        seen["after"] = "mcp" in sys.modules and "convo.serve._mcp_face" in sys.modules
    """.replace("INITIALIZE", repr(INITIALIZE)).replace("MCP_HEADERS", repr(MCP_HEADERS)),
        block=False)
    assert seen["made"] == []
    assert seen["stranger"] == [401, []]
    assert seen["first"] == [200, True]
    assert seen["after"] is True


def test_concurrent_first_requests_make_one_session_manager() -> None:
    from serve_kit import TEMPLATE, model

    from convo.serve import create_app
    from convo.serve._http.mcp import MCPEndpoint

    app = create_app(TEMPLATE, model())
    endpoint = next(route.app for route in app.routes if getattr(route, "path", "") == "/mcp")
    assert isinstance(endpoint, MCPEndpoint) and endpoint.manager is None

    async def twice() -> None:
        first, second = await asyncio.gather(endpoint._running(), endpoint._running())
        try:
            assert first is second is endpoint.manager
            assert endpoint.api.closers == [endpoint.close]
        finally:
            await endpoint.close()

    asyncio.run(twice())
