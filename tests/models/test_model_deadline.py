"""``OpenAIModel(timeout=...)`` is a deadline for the whole reply: a server
that trickles (a byte, a keep-alive comment or a chunk at a time, forever) is cut off there.

Nothing is timed: each call runs under a bound far above its timeout, and a call that is not
cut off (the bug) would never end, so the bound is what fails.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from rawserver import Raw, RawServer, sse

from convo import Message, ModelError, OpenAIModel

TIMEOUT_S = 0.5
BOUND_S = 15.0
CHUNKS = {"chat": json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}}]}).encode(),
          "responses": json.dumps({"type": "response.output_text.delta", "output_index": 0,
                                   "delta": "a"}).encode()}
BODIES = {"chat": json.dumps({"choices": [{"message": {"content": "x" * 400},
                                           "finish_reason": "stop"}]}),
          "responses": json.dumps({"status": "completed", "output": [
              {"type": "message", "content": [{"type": "output_text", "text": "x" * 400}]}]})}
ENDS = {"chat": json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        "responses": json.dumps({"type": "response.completed",
                                 "response": {"status": "completed", "output": []}})}
DRIPS = ("keep-alive comments", "a chunk at a time", "a byte at a time")


def drip(name: str, api: str) -> Raw:
    """A reply that never ends, in the shape of ``api``."""
    if name == "keep-alive comments":
        return Raw(itertools.repeat(b": keep-alive\n\n"), chunked=True,
                   content_type="text/event-stream", interval_s=0.05)
    if name == "a chunk at a time":
        return Raw(itertools.repeat(sse(CHUNKS[api], done=False)), chunked=True,
                   content_type="text/event-stream", interval_s=0.05)
    return Raw([bytes([b]) for b in BODIES[api].encode()], chunked=True, interval_s=0.05)


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    with RawServer() as server:
        yield server


def _bounded(call: Any) -> Any:
    """Run ``call`` on a thread; fail if it does not end within BOUND_S."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = call()
        except BaseException as exc:
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), f"the call did not end within {BOUND_S} s"
    return result


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("name", DRIPS)
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_trickling_reply_is_cut_off_at_the_deadline(raw: RawServer, name: str, api: str,
                                                      use_async: bool) -> None:
    raw.reply = drip(name, api)
    stream = name != "a byte at a time"
    texts: list[str] = []
    model = OpenAIModel("m", base_url=raw.base_url, api_key="k", max_retries=0, stream=stream,
                        timeout=TIMEOUT_S, api=api)

    def call() -> Message:
        if not use_async:
            with model:
                return model.complete([Message("user", "hi")], on_delta=texts.append)

        async def acall() -> Message:
            async with model:
                return await model.acomplete([Message("user", "hi")], on_delta=texts.append)

        return asyncio.run(acall())

    result = _bounded(call)
    error = result.get("error")
    assert isinstance(error, ModelError), result
    sent = "chunks" if stream else "bytes"
    assert str(error).startswith(f"the reply from {raw.base_url} (model 'm') did not finish "
                                 f"within the 0.5 s timeout (it had sent ")
    assert str(error).endswith(f" {sent}). Check the server, or raise timeout=")
    if name == "a chunk at a time":  # every chunk that came in time was shown (on a loaded
        came = int(str(error).rsplit("it had sent ", 1)[1].split()[0])  # machine, maybe none)
        assert texts == ["a"] * came


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_reply_within_the_deadline_is_read(raw: RawServer, api: str) -> None:
    raw.reply = Raw([sse(CHUNKS[api], ENDS[api].encode())],
                    content_type="text/event-stream", chunked=True)
    with OpenAIModel("m", base_url=raw.base_url, api_key="k", max_retries=0, stream=True,
                     timeout=BOUND_S, api=api) as model:
        assert model.complete([Message("user", "hi")]).content == "a"
