"""A weather bot whose runs are traced with OpenTelemetry (docs/telemetry.md).

``convo.otel.instrument()`` makes every run in the process emit spans that follow the
OpenTelemetry GenAI semantic conventions: an ``invoke_agent convo`` span per run, with a
``chat {model}`` span per model call and an ``execute_tool {tool}`` span per tool call under
it, and the ``gen_ai.client.token.usage`` / ``gen_ai.client.operation.duration`` histograms.
Message content is not recorded unless ``capture_content=True``.

Run it: ``python examples/traced_bot.py`` prints the finished spans as a tree (needs
``pip install -e ".[otel]" opentelemetry-sdk``). With the bot file as it is, ``convo run
examples/traced_bot.py --otel`` or ``convo serve examples/traced_bot.py --otel`` under
``opentelemetry-instrument`` send the spans wherever the OpenTelemetry environment says.
"""

from __future__ import annotations

from typing import Any

from convo import (
    LinearTemplate,
    LoopTemplate,
    Message,
    MockModel,
    Runner,
    ScriptedInterface,
    SystemTemplate,
    ToolCall,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny in {city}, 21 degrees."


template = LinearTemplate([
    SystemTemplate("You tell people the weather. Use get_weather."),
    LoopTemplate([UserTemplate(), ToolingTemplate([get_weather])]),
])

USAGE = {"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51}
mock_model = MockModel([
    Message("assistant", tool_calls=[ToolCall("call_1", "get_weather", {"city": "Oslo"})],
            metadata={"usage": USAGE}),
    Message("assistant", "It is sunny in Oslo, 21 degrees.", metadata={"usage": USAGE}),
])
demo_input = ["What is the weather in Oslo?"]


def tree(spans: Any) -> str:
    """The spans as an indented tree, children under their parent, in the order they began."""
    children: dict[Any, list[Any]] = {}
    for span in sorted(spans, key=lambda s: s.start_time):
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    lines: list[str] = []

    def show(parent: Any, depth: int) -> None:
        for span in children.get(parent, []):
            took = (span.end_time - span.start_time) / 1e6
            keys = ", ".join(f"{k}={v!r}" for k, v in span.attributes.items()
                             if k != "gen_ai.operation.name")
            lines.append(f"{'  ' * depth}{span.name}  ({took:.2f} ms)  {keys}")
            show(span.context.span_id, depth + 1)

    show(None, 0)
    return "\n".join(lines)


def main() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import convo.otel

    # In production: BatchSpanProcessor(OTLPSpanExporter()) from opentelemetry-exporter-otlp,
    # sending to a local collector or Jaeger (docs/telemetry.md).
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    convo.otel.instrument(tracer_provider=provider)
    session = Runner(mock_model, template, ScriptedInterface(demo_input)).run()
    print(f"The run ended {session.outcome.status.value if session.outcome else '?'}; "
          "its spans:")
    print(tree(exporter.get_finished_spans()))


if __name__ == "__main__":
    main()
