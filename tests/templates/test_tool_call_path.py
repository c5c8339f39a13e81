"""The path of one approved tool call through convo's modules (issue "Open seams", "One batch,
one ending"), as ``benchmarks/hops.py`` counts it: it may get shorter, never longer unnoticed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
MAX_HOPS = 35
MAX_FILES = 14


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hops_benchmark", ROOT / "benchmarks" / "hops.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_approved_tool_call_takes_at_most_35_hops_across_14_files() -> None:
    edges = _benchmark().hops()
    files = sorted({f.split(":")[0] for edge in edges for f in edge})
    assert len(edges) <= MAX_HOPS, sorted(edges)
    assert len(files) <= MAX_FILES, files


def test_the_turn_hands_the_calls_to_the_batch_and_the_batch_alone_reaches_the_tools() -> None:
    """``ToolingTemplate`` is the loop only: what it asks of ``tools/`` goes through
    ``templates/_batch.py``, which owns the batch (prepare, approve, run, tool messages)."""
    edges = _benchmark().hops()
    from_templates = sorted({(a.split(":")[0], b.split(":")[0]) for a, b in edges
                             if a.startswith("templates/") and b.startswith("tools/")})
    assert from_templates == [("templates/_batch.py", "tools/_base.py"),
                              ("templates/_batch.py", "tools/_calls.py")]
    assert ("templates/_tooling.py:ToolingTemplate.render", "templates/_batch.py:answer") \
        in edges
