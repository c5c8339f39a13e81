"""The bot the serving benchmark serves: the standard conversation, one user turn at a time.

``template`` runs its tool as convo runs any plain function tool, in a worker thread (so a
slow one never blocks the server); ``inline_template`` marks the tool ``inline=True`` (run on
the event loop, as the floor runs it), for a trivial tool such as this one."""

from conversation import SYSTEM, get_weather, mock_model, weather

from convo import LinearTemplate, LoopTemplate, SystemTemplate, ToolingTemplate, UserTemplate, tool


def _bot(weather_tool: object) -> LinearTemplate:
    return LinearTemplate([SystemTemplate(SYSTEM), LoopTemplate([
        UserTemplate(), ToolingTemplate([weather_tool])])])


def _inline_tool() -> object:
    @tool(name="get_weather", inline=True)  # the same schema as the standard tool's
    def get_weather_inline(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city's name.
        """
        return weather(city)
    return get_weather_inline


template = _bot(get_weather)
mock_model = mock_model()
try:
    inline_template = _bot(_inline_tool())
except TypeError:  # a convo before the one core (benchmarks/core.py --before) has no inline=
    inline_template = None
