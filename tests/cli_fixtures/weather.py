"""A chat with one tool, for the command-line tests of local-model options."""

from convo import LinearTemplate, LoopTemplate, MockModel, ToolingTemplate, UserTemplate, tool


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return f"Sunny in {city}"


template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([weather])])])
demo_input = ["Weather in Oslo?", "And Rome?"]
mock_model = MockModel(["{weather(city='Oslo')}", "Sunny."])
