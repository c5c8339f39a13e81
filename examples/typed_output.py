"""Typed output: the turn ends with a validated object, ready for code.

``output_type=Booking`` gives the model a ``final_result`` tool whose arguments are a
``Booking``; the turn ends when it calls it with valid arguments, and ``turn.output`` is the
``Booking``. Invalid arguments are fed back (here: a missing field) and the model tries again,
within the turn's ``max_iterations``. The tools take pydantic models and constrained types.

Run it: ``python examples/typed_output.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from convo import LinearTemplate, MockModel, SystemTemplate, ToolingTemplate, UserTemplate, tool


class Booking(BaseModel):
    """A confirmed table booking."""

    restaurant: str
    day: datetime.date
    guests: int = Field(ge=1, le=12)
    seating: Literal["inside", "terrace"] = "inside"


@tool
def free_tables(restaurant: str, day: datetime.date,
                guests: Annotated[int, Field(ge=1, le=12)]) -> list[str]:
    """Where a party can sit on a day.

    Args:
        restaurant: The restaurant's name.
        day: The day, as YYYY-MM-DD.
        guests: How many people.
    """
    return ["terrace"] if day.weekday() >= 5 else ["inside", "terrace"]


template = LinearTemplate([
    SystemTemplate("Book tables. Check free tables first."),
    UserTemplate(),
    ToolingTemplate([free_tables], output_type=Booking),
])

demo_input = ["A table for 4 at Lumen on 2025-06-07, please."]

mock_model = MockModel([
    "{free_tables(restaurant='Lumen', day='2025-06-07', guests=4)}",
    "{final_result(restaurant='Lumen', day='2025-06-07')}",        # no guests: fed back
    "{final_result(restaurant='Lumen', day='2025-06-07', guests=4, seating='terrace')}",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
