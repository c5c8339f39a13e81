"""The real JavaScript clients (tests/node/package.json): where they are, and running a script.

`.ci/run` installs them into a cache folder and exports CONVO_NODE_MODULES; a developer runs
`npm ci --prefix ~/.cache/convo-node` once with tests/node's two files copied there (see
docs/serving.md). Without them the tests that need them skip, saying how to install them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "node"


def node_modules() -> Path:
    """The folder holding @ag-ui/client and ai, or skip the test saying how to get it."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "convo-node"
    folder = Path(os.environ.get("CONVO_NODE_MODULES", default / "node_modules"))
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not (folder / "ai").is_dir() or not (folder / "@ag-ui" / "client").is_dir():
        pytest.skip(
            f"the node clients are not installed in {folder}: copy tests/node/package*.json "
            f"to {folder.parent} and run `npm ci` there (.ci/run does this)"
        )
    return folder


def run_node(script: str, *args: str, timeout: float = 60) -> Any:
    """Run `script` (ES module source) with the clients importable; its stdout's last line is JSON.

    The script is written beside the clients' node_modules, so its `import … from 'ai'` finds
    them; it reads its arguments from process.argv.slice(2).
    """
    folder = node_modules()
    path = folder.parent / f"convo-test-{os.getpid()}.mjs"
    path.write_text(script, encoding="utf-8")
    try:
        done = subprocess.run(
            ["node", str(path), *args], capture_output=True, text=True, timeout=timeout,
        )
    finally:
        path.unlink(missing_ok=True)
    if done.returncode != 0:
        raise AssertionError(f"node exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])
