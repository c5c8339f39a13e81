"""A weather bot for a small local model: tools in the prompt when the server has none.

Run it on a local OpenAI-compatible server (docs/local-models.md), for example llama.cpp's:

    python -m llama_cpp.server --model model.gguf --port 8080
    convo run examples/local_model.py --base-url http://127.0.0.1:8080/v1 --tool-format text

``--tool-format text`` describes ``weather`` and ``finish`` in the system message and reads
the model's ``<tool_call>`` blocks; a call it writes badly is answered with the expected
format. Offline (no key, no base URL) it runs on the mock model below.
"""

from convo import (
    FinishTool,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name, such as "Oslo".
    """
    return {"oslo": "cold and clear", "rome": "warm and sunny"}.get(city.lower(), "unknown")


template = LinearTemplate([
    SystemTemplate("You answer questions about the weather. Call weather for facts, then "
                   "answer in one sentence and call finish."),
    LoopTemplate([UserTemplate(), ToolingTemplate([weather, FinishTool()], max_iterations=4)]),
])

demo_input = ["What is the weather in Oslo?"]

mock_model = MockModel([
    "{weather(city='Oslo')}",
    "It is cold and clear in Oslo. {finish()}",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
