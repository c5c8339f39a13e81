"""Testing what a bot reports to OpenTelemetry, with ``convo.testing.captured_spans()``.

Run it with ``pytest examples/test_traced_bot.py`` (needs ``pip install -e ".[otel]"
opentelemetry-sdk``). Inside the ``with`` block every run is instrumented and each span lands
in the list as it ends; afterwards, whatever was instrumented before is back.
"""

from convo import LinearTemplate, Runner, ToolingTemplate, UserTemplate, tool
from convo.testing import captured_spans


@tool
def lookup_order(order: str) -> str:
    """Find an order."""
    if order == "X9":
        raise LookupError("no such order")
    return f"Order {order}: shipped."


bot = LinearTemplate([UserTemplate("Where is my order?"), ToolingTemplate([lookup_order])])


def test_each_tool_call_is_a_span_under_the_run(mock_model):
    model = mock_model(["{lookup_order(order='A1')}", "It has shipped."])
    with captured_spans() as spans:
        Runner(model, bot).run()

    run = next(s for s in spans if s.name == "invoke_agent convo")
    assert [s.name for s in spans if s.parent and s.parent.span_id == run.context.span_id] \
        == ["chat", "execute_tool lookup_order", "chat"]
    assert run.attributes["convo.outcome.status"] == "completed"


def test_a_failing_tool_is_an_error_span_and_no_content_is_kept(mock_model):
    model = mock_model(["{lookup_order(order='X9')}", "Sorry, I cannot find it."])
    with captured_spans() as spans:
        Runner(model, bot).run()

    [failed] = [s for s in spans if s.name == "execute_tool lookup_order"]
    assert failed.status.status_code.name == "ERROR"
    assert failed.attributes["error.type"] == "tool_error"
    assert "gen_ai.tool.call.arguments" not in failed.attributes  # capture_content is off
