"""convo's benchmarks: one command, a table on stdout, JSON in benchmarks/results/latest.json.

    python benchmarks/run.py            # the full run (a few minutes)
    python benchmarks/run.py --quick    # a short run, for a first look

What is measured (docs/performance.md explains the method):

- wire: the standard conversation (system + user -> one tool call -> tool -> final text, 2
  model calls) through ``OpenAIModel`` against ``convo.testing.OpenAIServer`` in a separate
  process, sequential (sync and async) and N conversations at once, each as a ratio to the raw
  ``openai`` SDK (``OpenAI`` / ``AsyncOpenAI``) making the same two calls in the same run;
- in-process: the same conversation on ``MockModel``, µs per conversation (sync and async);
- ``import convo`` vs ``import openai``; memory per idle message vs a plain list of dicts;
- tools: the first ``@tool`` of a process, each further one, and validating one call's
  arguments (next to pydantic's own validation of them).
- ``ContextWindow``: choosing what to send for a 10,000-message history, per call.

Needs the ``bench`` extra for the plot (matplotlib); without it the plot is skipped.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import context
import inprocess
import tools
import wire

import convo

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
JSON_PATH = HERE / "results" / "latest.json"
PLOT_PATH = ROOT / "docs" / "performance.png"

# (measure, target, "max" = the value must not exceed it)
TARGETS: dict[str, float] = {
    "wire_sync": 1.05,            # ratio to OpenAI
    "wire_async": 1.05,           # ratio to AsyncOpenAI
    "wire_concurrent_200": 1.10,  # ratio of wall time to AsyncOpenAI
    "wire_concurrent_1000": 1.10,
    "wire_responses_sync": 1.05,  # the same, on the Responses API (responses.create)
    "wire_responses_async": 1.05,
    "wire_responses_concurrent_200": 1.10,
    "inprocess_sync_us": 150.0,
    "inprocess_async_us": 150.0,
    "import_ms": 150.0,
    "import_ratio": 0.25,         # import convo / import openai
    "memory_bytes": 300.0,        # per idle message
    "tool_decorate_us": 2000.0,   # a @tool with a nested model, after the first
    "tool_validate_us": 50.0,     # one call's arguments, the same tool
    "context_choice_us": 1000.0,  # ContextWindow, 10,000 messages, per call
}


def _settings(quick: bool) -> dict[str, Any]:
    if quick:
        return {"seq_conversations": 10, "seq_rounds": 10, "levels": [(200, 3), (1000, 1)],
                "inprocess_conversations": 500, "inprocess_rounds": 5, "import_samples": 5,
                "tools": 100, "tool_calls": 5000, "tool_rounds": 5}
    return {"seq_conversations": 20, "seq_rounds": 30,
            "levels": [(10, 15), (50, 11), (200, 9), (1000, 5)],
            "inprocess_conversations": 2000, "inprocess_rounds": 11, "import_samples": 15,
            "tools": 300, "tool_calls": 20000, "tool_rounds": 11}


def _summary(values: list[float], scale: float = 1.0) -> dict[str, Any]:
    """Median, quartiles and extremes (quartiles need at least 2 values)."""
    scaled = sorted(v * scale for v in values)
    q1, _, q3 = statistics.quantiles(scaled, n=4) if len(scaled) > 1 else scaled * 3
    return {"median": statistics.median(scaled), "q1": q1, "q3": q3,
            "min": scaled[0], "max": scaled[-1], "n": len(scaled)}


def _pair(times: dict[str, list[float]]) -> dict[str, Any]:
    """Both sides in ms per conversation, and the ratio convo/raw of each round."""
    ratios = [c / r for c, r in zip(times["convo"], times["raw"], strict=True)]
    return {"convo_ms": _summary(times["convo"], 1e3), "raw_ms": _summary(times["raw"], 1e3),
            "ratio": _summary(ratios)}


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def measure(quick: bool, log: Any) -> dict[str, Any]:
    import openai

    settings = _settings(quick)
    results: dict[str, Any] = {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": quick, "settings": settings,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "versions": {"convo": convo.__version__, "openai": openai.__version__,
                     "commit": _git_commit()},
    }

    log("import time (fresh interpreters) ...")
    imports = inprocess.import_times(settings["import_samples"])
    convo_ms, openai_ms = _summary(imports["convo"], 1e3), _summary(imports["openai"], 1e3)
    results["import"] = {"convo_ms": convo_ms, "openai_ms": openai_ms,
                         "ratio": convo_ms["median"] / openai_ms["median"],
                         "convo_imports_openai": imports["convo_imports_openai"]}

    log("memory per idle message (fresh interpreter) ...")
    out = subprocess.run([sys.executable, str(HERE / "inprocess.py")], cwd=HERE, check=True,
                         capture_output=True, text=True).stdout
    results["memory"] = json.loads(out)

    log("tools: defining, validating ...")
    results["tools"] = {
        "first_tool_ms": _summary(tools.first_tool_ms(settings["import_samples"])),
        **{k: _summary(v) for k, v in tools.decoration_us(settings["tools"],
                                                          settings["tool_rounds"]).items()},
        **{k: _summary(v) for k, v in tools.validation_us(settings["tool_calls"],
                                                          settings["tool_rounds"]).items()},
    }

    log("in-process, MockModel ...")
    n, rounds = settings["inprocess_conversations"], settings["inprocess_rounds"]
    results["inprocess"] = {
        "sync_us": _summary(inprocess.conversation_sync(n, rounds), 1e6),
        "async_us": _summary(inprocess.conversation_async(n, rounds), 1e6),
    }

    log("ContextWindow, 10,000-message history ...")
    results["context"] = context.measure()

    with wire.server() as base_url:
        log("wire, sequential, sync ...")
        seq_n, seq_rounds = settings["seq_conversations"], settings["seq_rounds"]
        results["wire_sync"] = _pair(wire.sequential_sync(base_url, seq_n, seq_rounds))
        log("wire, async: sequential, then "
            + ", ".join(f"{c} at once" for c, _ in settings["levels"]) + " ...")
        suite = wire.async_suite(base_url, seq_n, seq_rounds, settings["levels"])
        log("wire on the Responses API: sequential sync and async, 200 at once ...")
        results["wire_responses_sync"] = _pair(wire.sequential_sync(
            base_url, seq_n, seq_rounds, api="responses"))
        responses = wire.async_suite(base_url, seq_n, seq_rounds,
                                     [lv for lv in settings["levels"] if lv[0] == 200],
                                     api="responses")
    results["wire_async"] = {str(c): _pair(t) for c, t in suite.items()}
    results["wire_responses_async"] = {str(c): _pair(t) for c, t in responses.items()}
    results["load_avg_after"] = os.getloadavg()
    results["targets"] = _verdicts(results)
    return results


def _values(results: dict[str, Any]) -> dict[str, float | None]:
    wire_async = results["wire_async"]

    def ratio(level: str) -> float | None:
        return wire_async[level]["ratio"]["median"] if level in wire_async else None

    return {
        "wire_sync": results["wire_sync"]["ratio"]["median"],
        "wire_async": ratio("1"),
        "wire_concurrent_200": ratio("200"),
        "wire_concurrent_1000": ratio("1000"),
        "wire_responses_sync": results["wire_responses_sync"]["ratio"]["median"],
        "wire_responses_async": results["wire_responses_async"]["1"]["ratio"]["median"],
        "wire_responses_concurrent_200": (results["wire_responses_async"]["200"]["ratio"]
                                          ["median"] if "200" in results["wire_responses_async"]
                                          else None),
        "inprocess_sync_us": results["inprocess"]["sync_us"]["median"],
        "inprocess_async_us": results["inprocess"]["async_us"]["median"],
        "import_ms": results["import"]["convo_ms"]["median"],
        "import_ratio": results["import"]["ratio"],
        "memory_bytes": results["memory"]["convo"],
        "tool_decorate_us": results["tools"]["decorate_rich"]["median"],
        "tool_validate_us": results["tools"]["validate_rich"]["median"],
        "context_choice_us": max(r["median_us"] for r in results["context"].values()),
    }


def _verdicts(results: dict[str, Any]) -> dict[str, Any]:
    verdicts = {}
    for key, value in _values(results).items():
        target = TARGETS[key]
        verdicts[key] = {"value": value, "target": target,
                         "met": None if value is None else value <= target}
    return verdicts


def table(results: dict[str, Any]) -> str:
    """The results as a Markdown table (the one docs/performance.md shows)."""
    rows = [("measure", "convo", "baseline", "ratio (median)", "ratio IQR", "target", "met")]

    def wire_row(label: str, pair: dict[str, Any], target_key: str | None) -> None:
        c, r, q = pair["convo_ms"], pair["raw_ms"], pair["ratio"]
        verdict = results["targets"].get(target_key) if target_key else None
        rows.append((label, f"{c['median']:.2f} ms", f"{r['median']:.2f} ms", f"{q['median']:.3f}×",
                     f"{q['q1']:.3f}–{q['q3']:.3f}",
                     f"≤ {verdict['target']:.2f}×" if verdict else "—", _met(verdict)))

    wire_row("wire, sequential, sync (per conversation)", results["wire_sync"], "wire_sync")
    for level, pair in results["wire_async"].items():
        if level == "1":
            wire_row("wire, sequential, async (per conversation)", pair, "wire_async")
        else:
            key = f"wire_concurrent_{level}"
            wire_row(f"wire, {level} at once (wall time / {level})", pair,
                     key if key in TARGETS else None)
    wire_row("wire, Responses API, sequential, sync", results["wire_responses_sync"],
             "wire_responses_sync")
    for level, pair in results["wire_responses_async"].items():
        label = ("wire, Responses API, sequential, async" if level == "1"
                 else f"wire, Responses API, {level} at once")
        wire_row(label, pair, "wire_responses_async" if level == "1"
                 else "wire_responses_concurrent_200")
    t = results["targets"]
    for key, label in (("sync_us", "sync"), ("async_us", "async")):
        s = results["inprocess"][key]
        rows.append((f"in-process, MockModel, {label} (per conversation)",
                     f"{s['median']:.0f} µs", "—", "—", f"{s['q1']:.0f}–{s['q3']:.0f} µs",
                     "≤ 150 µs", _met(t[f"inprocess_{key}"])))
    imp = results["import"]
    rows.append(("`import convo` vs `import openai`", f"{imp['convo_ms']['median']:.0f} ms",
                 f"{imp['openai_ms']['median']:.0f} ms", f"{imp['ratio']:.3f}×",
                 f"{imp['convo_ms']['q1']:.0f}–{imp['convo_ms']['q3']:.0f} ms",
                 "≤ 150 ms, ≤ 0.25×",
                 _met({"met": t["import_ms"]["met"] and t["import_ratio"]["met"]})))
    mem = results["memory"]
    rows.append(("memory per idle message (vs list of dicts)", f"{mem['convo']:.0f} B",
                 f"{mem['dicts']:.0f} B", f"{mem['convo'] / mem['dicts']:.3f}×", "—",
                 "≤ 300 B", _met(t["memory_bytes"])))
    _tool_rows(results, rows)
    ctx = results["context"]
    rows.append(("ContextWindow: what to send, 10,000 messages (per call)",
                 " / ".join(f"{r['median_us']:.0f} µs" for r in ctx.values()), "—", "—",
                 "p99 " + " / ".join(f"{r['p99_us']:.0f} µs" for r in ctx.values()),
                 "≤ 1000 µs", _met(t["context_choice_us"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
             for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _tool_rows(results: dict[str, Any], rows: list[tuple[str, ...]]) -> None:
    tl, t = results["tools"], results["targets"]
    first = tl["first_tool_ms"]
    rows.append(("first `@tool` of a process (imports pydantic)", f"{first['median']:.0f} ms",
                 "—", "—", f"{first['q1']:.0f}–{first['q3']:.0f} ms", "—", "—"))
    for kind in ("simple", "rich"):
        d = tl[f"decorate_{kind}"]
        rows.append((f"`@tool`, {kind} tool, after the first", f"{d['median']:.0f} µs", "—", "—",
                     f"{d['q1']:.0f}–{d['q3']:.0f} µs",
                     "≤ 2000 µs" if kind == "rich" else "—",
                     _met(t["tool_decorate_us"]) if kind == "rich" else "—"))
    for kind in ("simple", "rich"):
        v, p = tl[f"validate_{kind}"], tl[f"validate_{kind}_pydantic"]
        rows.append((f"validating a call, {kind} tool (vs pydantic alone)",
                     f"{v['median']:.1f} µs", f"{p['median']:.1f} µs",
                     f"{v['median'] / p['median']:.2f}×", f"{v['q1']:.1f}–{v['q3']:.1f} µs",
                     "≤ 50 µs" if kind == "rich" else "—",
                     _met(t["tool_validate_us"]) if kind == "rich" else "—"))


def _met(verdict: dict[str, Any] | None) -> str:
    if not verdict or verdict["met"] is None:
        return "—"
    return "yes" if verdict["met"] else "**no**"


def plot(results: dict[str, Any], path: Path) -> bool:
    """Time per conversation against concurrency, convo vs the raw SDK (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    levels = sorted(results["wire_async"], key=int)
    x = [int(level) for level in levels]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for side, label, style in (("raw_ms", "raw openai SDK (AsyncOpenAI)", "s--"),
                               ("convo_ms", "convo (Runner.arun + OpenAIModel)", "o-")):
        stats = [results["wire_async"][level][side] for level in levels]
        med = [s["median"] for s in stats]
        err = [[m - s["q1"] for m, s in zip(med, stats, strict=True)],
               [s["q3"] - m for m, s in zip(med, stats, strict=True)]]
        ax.errorbar(x, med, yerr=err, fmt=style, capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("conversations at once (1 = sequential)")
    ax.set_ylabel("ms per conversation (wall time / conversations)")
    ax.set_title("2 model calls + 1 tool, against a local fake server\n"
                 "(median and quartiles of the rounds)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (less precise)")
    parser.add_argument("--json", type=Path, default=JSON_PATH, help="where to write JSON")
    parser.add_argument("--plot", type=Path, default=PLOT_PATH, help="where to write the PNG")
    parser.add_argument("--no-plot", action="store_true", help="do not write the plot")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = measure(args.quick, log)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nJSON: {args.json}")
    if not args.no_plot:
        print(f"plot: {args.plot}" if plot(results, args.plot)
              else "plot: skipped (pip install -e '.[bench]' for matplotlib)")
    missed = [k for k, v in results["targets"].items() if v["met"] is False]
    if missed:
        print("targets missed: " + ", ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
