"""Text tool calls: what parsing and recovery cost per reply (docs/performance.md).

    python benchmarks/text_tools.py

- text format: a 2 kB reply (prose, then one ``<tool_call>`` block) read by ``read_reply``
  in the text format: target <= 20 µs;
- recovery: a 2 kB native reply that is prose (no leaked call) through ``read_reply``, and
  a reply that is a leaked call; target for prose: <= 2 µs added.

Each figure is the best of 7 repeats of a timed loop (µs per reply).
"""

from __future__ import annotations

import json
import timeit
from typing import Any

from convo import Message
from convo.models._openai.text_protocol import read_reply

TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
CALL = '<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
PROSE = ("The weather in Oslo is mild in spring, with cool mornings and bright afternoons. "
         * 30)[:2048]
TEXT_REPLY = Message("assistant", PROSE[: 2048 - len(CALL) - 1] + "\n" + CALL)
NATIVE_PROSE = Message("assistant", PROSE)
LEAKED = Message("assistant", json.dumps({"name": "weather", "arguments": {"city": "Oslo"}}))
TARGETS = {"text_format_2kb_us": 20.0, "recovery_overhead_prose_2kb_us": 2.0}


def per_call_us(fn: Any, number: int = 20000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def measure() -> dict[str, float]:
    assert len(TEXT_REPLY.content) == 2048 and len(NATIVE_PROSE.content) == 2048
    text = per_call_us(lambda: read_reply(TEXT_REPLY, TOOLS, tool_format="text"))
    on = per_call_us(lambda: read_reply(NATIVE_PROSE, TOOLS, tool_format="native"))
    off = per_call_us(lambda: read_reply(NATIVE_PROSE, TOOLS, tool_format="native",
                                         recover=False))
    leaked = per_call_us(lambda: read_reply(LEAKED, TOOLS, tool_format="native"))
    return {"text_format_2kb_us": text, "recovery_overhead_prose_2kb_us": on - off,
            "recovery_prose_2kb_us": on, "recovery_leaked_call_us": leaked}


def main() -> None:
    results = measure()
    for name, value in results.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else (" ok" if value <= target else " OVER")
        limit = "" if target is None else f"  (target <= {target:g})"
        print(f"{name:34} {value:8.2f} µs{limit}{verdict}")


if __name__ == "__main__":
    main()
