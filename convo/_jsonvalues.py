"""Which values come back exactly from JSON: what ``session.state`` may hold to be saved.

JSON keeps str, int, float, bool, None, lists and dicts with str keys. Anything else would
come back changed (a tuple as a list, an int key as a str, a datetime as its repr), so a
transcript refuses it where it appears, with the path to the value.
"""

from __future__ import annotations

from typing import Any, Final

_SCALARS: Final = (str, int, float, bool, type(None))


def json_problem(value: Any, where: str = "") -> str | None:
    """Why ``value`` would not come back from JSON as it is (``None``: it would)."""
    kind = type(value)
    if kind in _SCALARS:
        return None
    if kind is list:
        for i, item in enumerate(value):
            problem = json_problem(item, f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return (f"{where} has the key {key!r} ({type(key).__name__}): JSON keys are "
                        "strings, so it would come back as a string")
            problem = json_problem(item, f"{where}[{key!r}]")
            if problem is not None:
                return problem
        return None
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    name = kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"
    return (f"{where} is a {name} ({shown}), not a JSON value; "
            "it would not come back as it is")


def state_problem(state: dict[str, Any]) -> str | None:
    """Why ``session.state`` cannot be saved exactly, said for the user (``None``: it can)."""
    problem = json_problem(state, "session.state")
    if problem is None:
        return None
    return (f"{problem}. A saved conversation keeps state values that JSON returns exactly: "
            "str, int, float, bool, None, lists and dicts with str keys (store a date as "
            "an ISO string, a set as a sorted list)")
