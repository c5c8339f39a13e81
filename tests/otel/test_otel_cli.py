"""``--otel`` on the command line: the terminal run of a bot file reports to the SDK that the
file (or ``opentelemetry-instrument``) set up; without an SDK the command says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BOT = '''
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from convo import LinearTemplate, MockModel, ToolingTemplate, UserTemplate, tool

class ToFile(SpanExporter):
    def export(self, spans):
        with open(os.environ["SPANS_FILE"], "a") as f:
            for s in spans:
                parent = s.parent.span_id if s.parent else None
                f.write(json.dumps([s.name, s.context.span_id, parent,
                                    sorted(s.attributes)]) + "\\n")
        return SpanExportResult.SUCCESS

if os.environ.get("SPANS_FILE"):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ToFile()))
    trace.set_tracer_provider(provider)

@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()

template = LinearTemplate([UserTemplate(), ToolingTemplate([shout])])
mock_model = MockModel(["{shout(text='hi')}", "HI."])
demo_input = ["say hi loudly"]
'''


def convo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convo", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=120)


def test_convo_run_with_otel_traces_the_terminal_run(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(BOT, encoding="utf-8")
    spans_file = tmp_path / "spans.jsonl"
    result = convo("run", str(bot), "--mock", "--demo", "--otel-content",
                   env={"SPANS_FILE": str(spans_file), "OPENAI_API_KEY": ""})
    assert result.returncode == 0, result.stderr
    assert "no OpenTelemetry SDK" not in result.stderr

    spans = [json.loads(line) for line in spans_file.read_text().splitlines()]
    names = {span_id: name for name, span_id, _, _ in spans}
    assert [(name, names.get(parent)) for name, _, parent, _ in spans] == [
        ("chat", "invoke_agent convo"), ("execute_tool shout", "invoke_agent convo"),
        ("chat", "invoke_agent convo"), ("invoke_agent convo", None)]
    assert "gen_ai.input.messages" in spans[0][3]  # --otel-content records content


def test_otel_without_an_sdk_says_the_spans_go_nowhere(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text(BOT, encoding="utf-8")
    result = convo("run", str(bot), "--mock", "--demo", "--otel",
                   env={"SPANS_FILE": "", "OPENAI_API_KEY": ""})
    assert result.returncode == 0, result.stderr
    assert ("convo: --otel: no OpenTelemetry SDK is set up, so the spans go nowhere; run "
            "under opentelemetry-instrument or set one up in the bot file "
            "(docs/telemetry.md)") in result.stderr
