"""Tool measures: defining a tool (``@tool`` builds a pydantic model) and validating a call.

- ``first_tool_ms``: the first ``@tool`` in a fresh interpreter after ``import convo`` (it
  imports pydantic and docstring_parser);
- ``decoration_us``: each further ``@tool``, in-process, for a one-string tool and a tool with
  a nested model, a list, an enum and a constrained int;
- ``validation_us``: ``tool.validate(args)`` per call for the same two tools, next to
  pydantic's own ``validate_json`` of the same arguments (the floor convo adds to).
"""

from __future__ import annotations

import enum
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field

from convo import Tool, tool


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class Place(BaseModel):
    city: str
    country: str = "NO"


def simple_tool() -> Tool:
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city's name.
        """
        return city

    return tool(get_weather)


def rich_tool() -> Tool:
    def forecast(place: Place, days: Annotated[int, Field(ge=1, le=14)], hours: list[int],
                 unit: Unit = Unit.C) -> str:
        """A forecast.

        Args:
            place: Where.
            days: How many days ahead.
            hours: Which hours of the day.
            unit: Degrees in.
        """
        return place.city

    return tool(forecast)


SIMPLE_ARGS: dict[str, Any] = {"city": "Oslo"}
RICH_ARGS: dict[str, Any] = {"place": {"city": "Oslo"}, "days": 3, "hours": [8, 12, 18],
                             "unit": "celsius"}

_FIRST = (
    "import time, convo\n"
    "t = time.perf_counter()\n"
    "@convo.tool\n"
    "def f(city: str) -> str:\n"
    "    '''Weather.\n\n    Args:\n        city: The city.\n    '''\n"
    "    return city\n"
    "print(time.perf_counter() - t)\n"
)


def first_tool_ms(samples: int) -> list[float]:
    """Milliseconds for the first ``@tool`` of a process (pydantic's import included)."""
    return [float(subprocess.run([sys.executable, "-c", _FIRST], capture_output=True,
                                 text=True, check=True).stdout) * 1e3 for _ in range(samples)]


def _per_call(fn: Callable[[], Any], calls: int, rounds: int) -> list[float]:
    fn()
    values = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        values.append((time.perf_counter() - started) / calls)
    return values


def decoration_us(tools: int, rounds: int) -> dict[str, list[float]]:
    """µs per ``@tool``, after the first."""
    return {"decorate_simple": [v * 1e6 for v in _per_call(simple_tool, tools, rounds)],
            "decorate_rich": [v * 1e6 for v in _per_call(rich_tool, tools, rounds)]}


def validation_us(calls: int, rounds: int) -> dict[str, list[float]]:
    """µs per validated call, convo's ``validate`` and pydantic's ``validate_json`` alone."""
    out: dict[str, list[float]] = {}
    for label, t, args in (("simple", simple_tool(), SIMPLE_ARGS),
                           ("rich", rich_tool(), RICH_ARGS)):
        model = t.compiled._model
        text = json.dumps(args)
        out[f"validate_{label}"] = [v * 1e6 for v in _per_call(
            lambda t=t, a=args: t.validate(a), calls, rounds)]
        out[f"validate_{label}_pydantic"] = [v * 1e6 for v in _per_call(
            lambda m=model, s=text: m.__pydantic_validator__.validate_json(s, strict=True),
            calls, rounds)]
    return out


if __name__ == "__main__":
    # `python benchmarks/tools.py`: a quick look.
    print("first @tool ms", statistics.median(first_tool_ms(3)))
    for name, values in {**decoration_us(200, 5), **validation_us(20000, 5)}.items():
        print(name, f"{statistics.median(values):.1f} µs")
