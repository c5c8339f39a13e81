"""A trip planner for a reasoning model on the Responses API: it thinks, calls tools, and
its reasoning is carried from one call to the next.

Run it on OpenAI with a reasoning model (docs/models.md, "The Responses API"):

    convo run examples/reasoning_agent.py --api responses --reasoning low -m o4-mini

The model's reasoning summaries stream dimmed before each reply (``--hide-reasoning`` hides
them). Nothing is stored on the server (``store: false``): the encrypted reasoning items of
each reply are kept on the reply and sent back in place, so ``--save`` and ``--resume`` carry
the reasoning too. The same file runs on Chat Completions (leave out ``--api``), and offline
(no key, no base URL) on the mock model below.
"""

from convo import (
    FinishTool,
    LinearTemplate,
    LoopTemplate,
    Message,
    MockModel,
    SystemTemplate,
    ToolCall,
    ToolingTemplate,
    UserTemplate,
    tool,
)

FORECASTS = {"oslo": "snow, -4 °C", "lisbon": "sunny, 19 °C", "rome": "rain, 12 °C"}


@tool
def forecast(city: str) -> str:
    """Tomorrow's weather in a city.

    Args:
        city: The city's name, such as "Oslo".
    """
    return FORECASTS.get(city.lower(), f"no forecast for {city}")


template = LinearTemplate([
    SystemTemplate("You plan weekend trips. Compare the forecasts of the cities the user "
                   "names, recommend one in two sentences, then call finish."),
    LoopTemplate([UserTemplate(), ToolingTemplate([forecast, FinishTool()],
                                                  max_iterations=6)]),
])

demo_input = ["Oslo or Lisbon this weekend?"]

# What a reasoning model's replies look like: each carries its reasoning items (opaque,
# encrypted) in metadata["reasoning"]; convo sends them back with the reply they belong to.
_THOUGHT = {"id": "rs_demo", "type": "reasoning", "encrypted_content": "gAAAA-demo",
            "summary": [{"type": "summary_text", "text": "Compare both forecasts first."}]}

mock_model = MockModel([
    Message("assistant", "", tool_calls=[ToolCall("call_1", "forecast", {"city": "Oslo"}),
                                         ToolCall("call_2", "forecast", {"city": "Lisbon"})],
            metadata={"reasoning": [_THOUGHT]}),
    "Lisbon: sunny and 19 °C, while Oslo expects snow. Pack light! {finish()}",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above. Add --api responses for the Responses API.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
