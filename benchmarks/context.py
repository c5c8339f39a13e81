"""ContextWindow: the cost of choosing what to send, for a 10,000-message history.

    python benchmarks/context.py          # prints the numbers (also part of benchmarks/run.py)

A session starts with 10,000 messages (user questions, tool calls — every fifth one two in
parallel — with their results, answers, an occasional system message); then, call after call,
two messages are appended (a question and its answer) and the window chooses what to send
(``convo._summary.fit`` up to the request it makes: the estimate of the new messages, the
choice of the cut, the copy of what is sent; with ``summarize``, a summary call it asks for
is answered at once, so making the prompt is counted but not the model). ``first_us`` is the
first call on the session (the whole history is indexed once); ``median_us`` and ``p99_us``
the calls after it. Two windows of 8,000 tokens: without a summary, and with ``summarize``
from a saved summary on (its steady state: reused, and renewed when the tail outgrows it).
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

from convo import ContextWindow, Message, Session, ToolCall
from convo._requests import CallModel
from convo._summary import CONTEXT_KEY, fingerprint, fit

HISTORY = 10_000
TOOLS = ({"type": "function", "function": {"name": "search", "description": "Search.",
                                           "parameters": {"type": "object", "properties": {
                                               "q": {"type": "string"}}}}},)


def history(n: int = HISTORY) -> list[Message]:
    out = [Message("system", "You are a helpful research assistant. Cite your sources.")]
    i = 0
    while len(out) < n:
        out.append(Message("user", f"Question {i}: " + "what about this detail? " * 8))
        calls = tuple(ToolCall(f"c{i}_{k}", "search", {"q": f"detail {i} {k}"})
                      for k in range(2 if i % 5 == 0 else 1))
        out.append(Message("assistant", "", tool_calls=calls))
        out.extend(Message("tool", "result text " * 25, tool_call_id=c.id, name="search")
                   for c in calls)
        if i % 50 == 0:
            out.append(Message("system", "Remember: cite your sources."))
        out.append(Message("assistant", f"Answer {i}: " + "here is what I found. " * 14))
        i += 1
    return out[:n]


SUMMARY = Message("assistant", "The user asked many questions about details. " * 10)


def _choose(window: ContextWindow, session: Session, request: CallModel) -> Any:
    """The request ``fit`` makes (a summary call is answered at once, and counted)."""
    flow = fit(window, session, request, None, lambda event: None)
    sent = next(flow)
    while sent.purpose == "summary":
        session.state["summary calls"] = session.state.get("summary calls", 0) + 1
        sent = flow.send(SUMMARY)
    flow.close()
    return sent


def choice_times(summarize: bool, calls: int = 2000) -> dict[str, Any]:
    """µs for the first choice and per choice after it (median, p99), with what was sent."""
    window = ContextWindow(8000, summarize=summarize)
    session = Session(history())
    if summarize:  # a summary saved earlier, standing for all but the newest ~60 messages
        upto = next(i for i in range(len(session.messages) - 60, 0, -1)
                    if session.messages[i].role == "user")
        session.state[CONTEXT_KEY] = {"summary": "The user asked many questions. " * 20,
                                      "upto": upto,
                                      "check": fingerprint(session.messages[upto - 1])}
    request = CallModel(None, TOOLS)
    started = time.perf_counter()
    first = _choose(window, session, request)
    first_us = (time.perf_counter() - started) * 1e6
    assert first.purpose == "reply" and first.messages is not None
    times = []
    gc.collect()
    for i in range(calls):
        session.messages.append(Message("user", f"Follow-up {i}: and then? " * 6))
        started = time.perf_counter()
        sent = _choose(window, session, request)
        times.append((time.perf_counter() - started) * 1e6)
        session.messages.append(Message("assistant", "Then this happened. " * 12))
    times.sort()
    return {"first_us": first_us, "median_us": statistics.median(times),
            "p99_us": times[int(len(times) * 0.99)], "calls": calls,
            "history": HISTORY, "sent_messages": len(sent.messages),
            "sent_tokens": window.estimate(sent.messages),
            "summary_calls": session.state.get("summary calls", 0)}


def measure() -> dict[str, Any]:
    return {"plain": choice_times(False), "summarized": choice_times(True)}


if __name__ == "__main__":
    for name, r in measure().items():
        print(f"{name:>10}: first call {r['first_us'] / 1000:.1f} ms, then "
              f"{r['median_us']:.0f} µs per call (p99 {r['p99_us']:.0f} µs); sends "
              f"{r['sent_messages']} messages, ~{r['sent_tokens']} tokens of {r['history']}+; "
              f"{r['summary_calls']} summary calls")
