"""Providers on their own wire: ``AnthropicModel`` against the raw ``anthropic`` SDK, and
``GeminiModel`` against the raw ``google-genai`` SDK.

    python benchmarks/providers.py            # ratios in one run, JSON in results/providers.json
    python benchmarks/providers.py --quick

The standard conversation (benchmarks/conversation.py: system + user -> one tool call ->
the tool -> the final text, 2 model calls) through ``AnthropicModel`` (``GeminiModel``) under
``Runner``, and the raw SDK (``anthropic.Anthropic`` / ``AsyncAnthropic``; ``genai.Client`` and
its ``.aio``) sending the very same two request bodies (checked before timing) and running the
tool itself, against one ``AnthropicServer`` (``GeminiServer``) in a process of its own:
sequential sync, sequential async, and 200 conversations at once. The async measures have two
more sides: the raw SDK running its blocking tool in ``asyncio.to_thread`` (what an async
program must do with a tool that may block; the plain raw side runs it on the loop), and convo
with the tool ``inline=True`` (on the loop, as the plain raw side); and they give the client
process's CPU time per conversation beside the wall time ("client cpu" rows).
The sides take turns round by round (ABBA), each keeping one client for the whole run; each
round gives a ratio convo / raw and the table shows the median and its interquartile range.

Each provider is one ``Provider`` entry in ``PROVIDERS`` (its server, its model, the raw
SDK's clients and two calls). A provider whose extra is not installed is skipped with a line
saying so.

Then the cache figure: a 20-turn conversation on ``AnthropicServer`` (its accounting of API.md
§23), cached input tokens as a share of all input tokens, per turn and from turn 3 on (target
≥ 80 %).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import datetime
import gc
import importlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
from conversation import FINAL, SYSTEM, TEMPLATE, TOOLS, USER, check, get_weather, weather

from convo import (
    LinearTemplate,
    Message,
    Runner,
    SystemTemplate,
    ToolCall,
    ToolingTemplate,
    UserTemplate,
)

HERE = Path(__file__).resolve().parent
JSON_PATH = HERE / "results" / "providers.json"
MODEL = "bench-model"
API_KEY = "bench"
TARGET = 1.00
CACHE_TARGET = 0.80
Times = dict[str, list[float]]  # side ("convo", "raw") -> seconds per conversation, per round


# -- Anthropic: the server's replies and the raw SDK's calls ----------------------------------

EPH = {"type": "ephemeral"}
_ids = itertools.count(1)


def anthropic_reply(body: dict[str, Any]) -> str | Message:
    """A tool call until the last user turn holds a tool result, then the final text."""
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return FINAL
    call = ToolCall(f"toolu_{next(_ids)}", "get_weather", {"city": "Oslo"})
    return Message("assistant", "", tool_calls=(call,))


ANTHROPIC_TOOLS = [{"name": t["function"]["name"],
                    "input_schema": t["function"]["parameters"],
                    "description": t["function"]["description"],
                    "cache_control": EPH} for t in TOOLS]
ANTHROPIC_SYSTEM = [{"type": "text", "text": SYSTEM, "cache_control": EPH}]


def _first() -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": USER,
                                          "cache_control": EPH}]}]


def _calls(reply: Any) -> list[Any]:
    return [b for b in reply.content if b.type == "tool_use"]


def _second(reply: Any, outputs: list[str]) -> list[dict[str, Any]]:
    """The second request's messages, as a careful hand-written client sends them: the cache
    mark moves to the last block; ``outputs`` are the tool's, one per call."""
    calls = _calls(reply)
    turn: list[dict[str, Any]] = [{"type": "text", "text": b.text}
                                  for b in reply.content if b.type == "text" and b.text]
    turn += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls]
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": output}
               for c, output in zip(calls, outputs, strict=True)]
    results[-1]["cache_control"] = EPH
    return [{"role": "user", "content": [{"type": "text", "text": USER}]},
            {"role": "assistant", "content": turn}, {"role": "user", "content": results}]


def anthropic_raw_sync(client: Any) -> str:
    first = client.messages.create(max_tokens=4096, messages=_first(), model=MODEL,
                                   system=ANTHROPIC_SYSTEM, tools=ANTHROPIC_TOOLS)
    outputs = [weather(**c.input) for c in _calls(first)]
    second = client.messages.create(max_tokens=4096, messages=_second(first, outputs),
                                    model=MODEL, system=ANTHROPIC_SYSTEM, tools=ANTHROPIC_TOOLS)
    text: str = second.content[0].text
    return text


async def anthropic_raw_async(client: Any, threaded: bool = False) -> str:
    """``threaded``: the blocking tool runs in ``asyncio.to_thread``, as an async program
    must run a tool that may block; else on the event loop, as the sync side does."""
    first = await client.messages.create(max_tokens=4096, messages=_first(), model=MODEL,
                                         system=ANTHROPIC_SYSTEM, tools=ANTHROPIC_TOOLS)
    outputs = [await asyncio.to_thread(weather, **c.input) if threaded else weather(**c.input)
               for c in _calls(first)]
    second = await client.messages.create(max_tokens=4096, messages=_second(first, outputs),
                                          model=MODEL, system=ANTHROPIC_SYSTEM,
                                          tools=ANTHROPIC_TOOLS)
    text: str = second.content[0].text
    return text


# -- Gemini: the server's replies and the raw SDK's calls -------------------------------------

def gemini_reply(body: dict[str, Any]) -> str | Message:
    """A tool call until the last user turn holds a function response, then the final text."""
    if any("functionResponse" in p for p in body["contents"][-1]["parts"]):
        return FINAL
    call = ToolCall(f"call_{next(_ids)}", "get_weather", {"city": "Oslo"})
    return Message("assistant", "", tool_calls=(call,))


GEMINI_CONFIG = {
    "system_instruction": SYSTEM,
    "tools": [{"function_declarations": [
        {"name": t["function"]["name"], "description": t["function"]["description"],
         "parameters_json_schema": t["function"]["parameters"]} for t in TOOLS]}],
}
GEMINI_FIRST = [{"role": "user", "parts": [{"text": USER}]}]


def _gemini_second(reply: Any, outputs: list[str]) -> list[Any]:
    """The second request's contents: the reply's own content back, the tool's outputs."""
    said = reply.candidates[0].content
    responses = [{"function_response": {"id": c.id, "name": c.name,
                                        "response": {"output": output}}}
                 for c, output in zip(reply.function_calls or (), outputs, strict=True)]
    return [*GEMINI_FIRST, said, {"role": "user", "parts": responses}]


def gemini_raw_sync(client: Any) -> str:
    first = client.models.generate_content(model=MODEL, contents=GEMINI_FIRST,
                                           config=GEMINI_CONFIG)
    outputs = [weather(**(c.args or {})) for c in first.function_calls or ()]
    second = client.models.generate_content(model=MODEL, contents=_gemini_second(first, outputs),
                                            config=GEMINI_CONFIG)
    text: str = second.text
    return text


async def gemini_raw_async(client: Any, threaded: bool = False) -> str:
    first = await client.models.generate_content(model=MODEL, contents=GEMINI_FIRST,
                                                 config=GEMINI_CONFIG)
    outputs = [await asyncio.to_thread(weather, **(c.args or {})) if threaded
               else weather(**(c.args or {})) for c in first.function_calls or ()]
    second = await client.models.generate_content(
        model=MODEL, contents=_gemini_second(first, outputs), config=GEMINI_CONFIG)
    text: str = second.text
    return text


def gemini_client(base_url: str, api_key: str) -> Any:
    from google import genai

    return genai.Client(api_key=api_key, http_options={"base_url": base_url})


def gemini_async_client(base_url: str, api_key: str) -> Any:
    return gemini_client(base_url, api_key).aio


def _sdk_class(what: str) -> Callable[[str, str], Any]:
    """A client factory ``(base_url, api_key)`` for an SDK class named ``module:name``."""
    def make(base_url: str, api_key: str) -> Any:
        module, _, name = what.partition(":")
        return getattr(importlib.import_module(module), name)(base_url=base_url,
                                                              api_key=api_key)
    return make


@attrs.frozen
class Provider:
    """One provider's side of the benchmark: where its fake server and its model live
    (``module:name``), the raw SDK's clients and its two calls, and what to install."""

    sdk: str
    server: str
    model: str
    client: Callable[[str, str], Any]
    async_client: Callable[[str, str], Any]
    reply: Callable[[dict[str, Any]], Any]
    raw_sync: Callable[[Any], str]
    raw_async: Callable[[Any, bool], Awaitable[str]]
    extra: str

    def missing(self) -> str | None:
        """Why this provider cannot run here, or None."""
        for what in (self.sdk, self.server, self.model):
            module, _, name = what.partition(":")
            try:
                found = importlib.import_module(module)
            except ImportError:
                return (f"the {self.extra} extra is not installed (pip install -e "
                        f"\".[{self.extra}]\" in convo's checkout)")
            if name and not hasattr(found, name):
                return f"{what} is not in this convo yet"
        return None

    def load(self, what: str) -> Any:
        module, _, name = what.partition(":")
        return getattr(importlib.import_module(module), name)


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        "anthropic", "convo.testing:AnthropicServer", "convo:AnthropicModel",
        _sdk_class("anthropic:Anthropic"), _sdk_class("anthropic:AsyncAnthropic"),
        anthropic_reply, anthropic_raw_sync, anthropic_raw_async, "anthropic"),
    "gemini": Provider(
        "google.genai", "convo.testing:GeminiServer", "convo:GeminiModel", gemini_client,
        gemini_async_client, gemini_reply, gemini_raw_sync, gemini_raw_async, "gemini"),
}


# -- the server, in a process of its own ------------------------------------------------------

def serve(name: str) -> None:
    """Serve ``name``'s fake until stdin closes, printing its base URL first."""
    provider = PROVIDERS[name]
    server_class = provider.load(provider.server)
    with server_class(handler=provider.reply, keep_requests=False) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


@contextmanager
def server(name: str) -> Iterator[str]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", name],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the {name} benchmark server did not start (said {base_url!r})")
        yield base_url
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def same_requests(provider: Provider) -> None:
    """Both sides send the same bodies (on an in-process server that keeps them)."""
    server_class = provider.load(provider.server)
    with server_class(handler=provider.reply) as fake:
        model = provider.load(provider.model)(MODEL, base_url=fake.base_url, api_key=API_KEY)
        check(Runner(model, TEMPLATE).run())
        model.close()
        client = provider.client(fake.base_url, API_KEY)
        provider.raw_sync(client)
        client.close()
        convo_side, raw_side = fake.requests[:2], fake.requests[2:]
    for mine, theirs in zip(convo_side, raw_side, strict=True):
        if _without_ids(mine) != _without_ids(theirs):  # the tool-call ids differ, by design
            raise AssertionError(f"the raw side sends another request:\n{mine}\n{theirs}")


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("id" if k in ("id", "tool_use_id") else _without_ids(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


# -- timing -----------------------------------------------------------------------------------

def _order(round_number: int, names: list[str]) -> list[str]:
    """ABBA: every side goes first as often as last."""
    return names if round_number % 2 == 0 else names[::-1]


def sequential_sync(provider: Provider, base_url: str, conversations: int,
                    rounds: int) -> Times:
    model = provider.load(provider.model)(MODEL, base_url=base_url, api_key=API_KEY)
    runner = Runner(model, TEMPLATE)
    client = provider.client(base_url, API_KEY)
    sides: dict[str, Callable[[], Any]] = {"convo": lambda: check(runner.run()),
                                           "raw": lambda: provider.raw_sync(client)}
    for side in sides.values():  # warm up: connections, caches
        side()
    times: Times = {"convo": [], "raw": []}
    for r in range(rounds):
        for name in _order(r, list(sides)):
            gc.collect()
            started = time.perf_counter()
            for _ in range(conversations):
                sides[name]()
            times[name].append((time.perf_counter() - started) / conversations)
    model.close()
    client.close()
    return times


def _inline_template() -> Any:
    """The standard template with its tool marked ``inline=True`` (run on the loop)."""
    inline = copy.copy(get_weather)
    inline.inline = True
    return LinearTemplate([SystemTemplate(SYSTEM), UserTemplate(USER),
                           ToolingTemplate([inline])])


async def _async_suite(provider: Provider, base_url: str, conversations: int, rounds: int,
                       at_once: int, at_once_rounds: int) -> dict[str, Times]:
    """Four sides, in turn: convo (the sync tool in convo's worker thread, its rule under
    ``arun``), convo with the tool ``inline=True``, the raw SDK running the tool on the loop,
    and the raw SDK running it in ``asyncio.to_thread``."""
    model = provider.load(provider.model)(MODEL, base_url=base_url, api_key=API_KEY)
    runner = Runner(model, TEMPLATE)
    runner_inline = Runner(model, _inline_template())
    client = provider.async_client(base_url, API_KEY)

    async def convo_one() -> None:
        check(await runner.arun())

    async def convo_inline_one() -> None:
        check(await runner_inline.arun())

    async def raw_one() -> None:
        await provider.raw_async(client, False)

    async def raw_thread_one() -> None:
        await provider.raw_async(client, True)

    sides: dict[str, Callable[[], Awaitable[None]]] = {
        "convo": convo_one, "convo_inline": convo_inline_one, "raw": raw_one,
        "raw_thread": raw_thread_one}

    async def measure(concurrency: int, batches: int, rounds: int) -> tuple[Times, Times]:
        """Wall time per conversation, and this process's CPU time (the client's, every
        thread's: the server runs in a process of its own) per conversation."""
        times: Times = {name: [] for name in sides}
        cpu: Times = {name: [] for name in sides}
        for r in range(rounds):
            for name in _order(r, list(sides)):
                gc.collect()
                started, used = time.perf_counter(), time.process_time()
                for _ in range(batches):
                    await asyncio.gather(*(sides[name]() for _ in range(concurrency)))
                times[name].append((time.perf_counter() - started) / (batches * concurrency))
                cpu[name].append((time.process_time() - used) / (batches * concurrency))
        return times, cpu

    for side in sides.values():  # warm up: both pools hold their keep-alive connections
        await asyncio.gather(*(side() for _ in range(at_once)))
    results: dict[str, Times] = {}
    for kind, args in (("async", (1, conversations, rounds)),
                       (f"{at_once}_at_once", (at_once, 1, at_once_rounds))):
        results[kind], results[f"{kind}_client_cpu"] = await measure(*args)
    await model.aclose()
    await (client.aclose() if hasattr(client, "aclose") else client.close())
    return results


def _ratio(times: Times, side: str, base: str) -> dict[str, float]:
    """The median and quartiles of the per-round ratios ``side`` / ``base``."""
    ratios = sorted(c / r for c, r in zip(times[side], times[base], strict=True))
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return {"ratio": statistics.median(ratios), "ratio_q1": q1, "ratio_q3": q3}


def _pair(times: Times) -> dict[str, Any]:
    pair: dict[str, Any] = {f"{name}_ms": statistics.median(t) * 1e3
                            for name, t in times.items()}
    pair.update(_ratio(times, "convo", "raw"), rounds=len(times["convo"]))
    for side, base in (("convo", "raw_thread"), ("convo_inline", "raw")):
        if side in times and base in times:
            pair[f"{side}_vs_{base}"] = _ratio(times, side, base)
    return pair


# -- the cache figure -------------------------------------------------------------------------

def cache_figure(turns: int = 20) -> list[dict[str, int]]:
    """Per turn of a ``turns``-turn chat on AnthropicServer: input tokens and cache reads."""
    from convo import (
        AnthropicModel,
        AssistantTemplate,
        LinearTemplate,
        LoopTemplate,
        SystemTemplate,
        UserTemplate,
    )
    from convo._interfaces.scripted import ScriptedInterface
    from convo.testing import AnthropicServer

    said = [f"Question {i}: tell me about the weather in city number {i}, please." for i in
            range(turns)]
    answers = [f"Answer {i}: " + "It is mild and dry there today. " * 6 for i in range(turns)]
    template = LinearTemplate([SystemTemplate(SYSTEM), LoopTemplate(
        [UserTemplate(), AssistantTemplate()], exit_loop_count=turns)])
    with AnthropicServer(answers) as fake, AnthropicModel(
            MODEL, base_url=fake.base_url, api_key=API_KEY) as model:
        session = Runner(model, template, ScriptedInterface(said)).run()
    rows = []
    for turn, message in enumerate((m for m in session.messages if m.role == "assistant"), 1):
        usage = message.usage
        assert usage is not None
        rows.append({"turn": turn, "input": usage.prompt_tokens,
                     "cache_read": usage.cache_read_tokens,
                     "cache_write": usage.cache_write_tokens})
    return rows


def _more(pair: dict[str, Any]) -> tuple[str, str, str, str]:
    """The async rows' other columns: the raw side with its tool in ``asyncio.to_thread``,
    and convo with its tool ``inline=True``."""
    if "raw_thread_ms" not in pair:
        return "—", "—", "—", "—"
    thread, inline = pair["convo_vs_raw_thread"], pair["convo_inline_vs_raw"]
    return (f"{pair['raw_thread_ms']:.2f} ms",
            f"{thread['ratio']:.3f}× ({thread['ratio_q1']:.3f}–{thread['ratio_q3']:.3f})",
            f"{pair['convo_inline_ms']:.2f} ms",
            f"{inline['ratio']:.3f}× ({inline['ratio_q1']:.3f}–{inline['ratio_q3']:.3f})")


# -- the run ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run, for a first look")
    parser.add_argument("--only", choices=sorted(PROVIDERS), help="one provider")
    parser.add_argument("--at-once-rounds", type=int, help="rounds of the 200-at-once measure")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    seq, rounds, at_once, at_once_rounds = (10, 10, 200, 3) if args.quick else (20, 30, 200, 9)
    at_once_rounds = args.at_once_rounds or at_once_rounds
    results: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average "
                   f"{os.getloadavg()[0]:.1f} at the start",
        "python": platform.python_version(), "providers": {}}
    rows = [("measure", "convo", "raw SDK", "ratio (median)", "ratio IQR", "target", "met",
             "raw, tool in to_thread", "ratio to that (IQR)", "convo, tool inline",
             "inline / raw (IQR)")]
    expected = ["anthropic", "gemini"]  # the providers the issue asks a ratio of
    names = [args.only] if args.only else [*PROVIDERS, *(n for n in expected if n not in PROVIDERS)]
    for name in names:
        provider = PROVIDERS.get(name)
        why = "its Provider entry is not written" if provider is None else provider.missing()
        if why is not None:
            print(f"{name}: skipped: {why}", file=sys.stderr)
            results["providers"][name] = {"skipped": why}
            continue
        assert provider is not None
        same_requests(provider)
        print(f"{name}: sequential sync, then async, then {at_once} at once ...", file=sys.stderr)
        with server(name) as base_url:
            measured = {"sync": sequential_sync(provider, base_url, seq, rounds),
                        **asyncio.run(_async_suite(provider, base_url, seq, rounds, at_once,
                                                   at_once_rounds))}
        results["providers"][name] = {k: _pair(v) for k, v in measured.items()}
        for kind, pair in results["providers"][name].items():
            rows.append((f"{name}, {kind.replace('_', ' ')} (per conversation)",
                         f"{pair['convo_ms']:.2f} ms", f"{pair['raw_ms']:.2f} ms",
                         f"{pair['ratio']:.3f}×", f"{pair['ratio_q1']:.3f}–{pair['ratio_q3']:.3f}",
                         *((f"≤ {TARGET:.2f}×", "yes" if pair["ratio"] <= TARGET else "no")
                           if "cpu" not in kind else ("—", "—")),
                         *_more(pair)))
    cache = cache_figure()
    later = cache[2:]
    share = sum(r["cache_read"] for r in later) / sum(r["input"] for r in later)
    results["cache"] = {"turns": cache, "read_share_from_turn_3": share}
    rows.append(("anthropic, 20 turns: cache reads / input, turn 3 on", f"{share:.1%}", "", "",
                 "", f"≥ {CACHE_TARGET:.0%}", "yes" if share >= CACHE_TARGET else "no",
                 "", "", "", ""))
    results["load_average_at_the_end"] = round(os.getloadavg()[0], 1)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    print(f"({results['machine']}; {results['load_average_at_the_end']} at the end)")
    JSON_PATH.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
