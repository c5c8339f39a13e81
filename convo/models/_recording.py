"""Record a real model's exchanges to a readable JSON file, and replay them as a model in CI.

::

    model = RecordingModel(OpenAIModel("gpt-4o-mini"), "tests/recordings/greet.json")
    Runner(model, template).run()          # once, against the real model

    model = ReplayModel("tests/recordings/greet.json")
    Runner(model, template).run()          # in CI: no network, same replies

The file holds one exchange per model call: the request (the messages, without metadata, and
the tool schemas) and the reply message. ``RecordingModel`` rewrites it after every exchange, so
a crash loses nothing. ``ReplayModel`` answers a request with the reply recorded for an equal
request; a request the recording does not have raises ``ScriptError`` with a diff against the
recorded request it was expected to match.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from .._errors import ScriptError
from .._messages import Message
from ._base import DeltaCallback, Model, SyncModel, ToolSchemas

FORMAT: Final = "convo.recording"
FORMAT_VERSION: Final = 1

__all__ = ["Exchange", "RecordingModel", "ReplayModel", "load_recording", "replay_or_record"]

Exchange = dict[str, Any]


def wire_request(messages: Sequence[Message], tools: ToolSchemas) -> dict[str, Any]:
    wire = []
    for message in messages:
        d = message.to_dict()
        d.pop("metadata", None)  # never sent to a model; usage and timings would differ
        wire.append(d)
    return {"messages": wire, "tools": [dict(t) for t in tools]}


def _write(path: Path, exchanges: list[Exchange]) -> None:
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "exchanges": exchanges}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class RecordingModel:
    """Wraps a model: every exchange is passed through and written to ``path`` as it happens.

    The file is (re)written after each model call; it starts empty when the first reply
    arrives. Failed calls are not recorded.
    """

    __slots__ = ("calls", "exchanges", "model", "path")

    def __init__(self, model: Model, path: str | os.PathLike[str]) -> None:
        self.model = model
        self.path = Path(path)
        self.exchanges: list[Exchange] = []
        self.calls: list[dict[str, Any]] = []

    def _record(self, request: dict[str, Any], reply: Message) -> Message:
        self.exchanges.append({"request": request, "reply": reply.to_dict()})
        _write(self.path, self.exchanges)
        return reply

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        request = wire_request(messages, tools)
        self.calls.append(request)
        return self._record(request, self.model.complete(messages, tools, on_delta=on_delta))

    async def acomplete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        request = wire_request(messages, tools)
        self.calls.append(request)
        reply = await self.model.acomplete(messages, tools, on_delta=on_delta)
        return self._record(request, reply)

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r}, {str(self.path)!r})"


def load_recording(path: str | os.PathLike[str]) -> list[Exchange]:
    """The exchanges of a recording file, checked."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not a convo recording (expected format {FORMAT!r})")
    version = doc.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"{path}: recording version {version!r} is newer than this convo "
                         f"reads (up to {FORMAT_VERSION}); upgrade convo")
    exchanges: list[Exchange] = doc.get("exchanges") or []
    return exchanges


def request_lines(request: Mapping[str, Any]) -> list[str]:
    """A request as lines that diff well: one message per line (long text wrapped by lines)."""
    lines: list[str] = []
    for i, m in enumerate(request["messages"]):
        head = f"[{i}] {m['role']}"
        if m.get("tool_call_id"):
            head += f" (answers {m['tool_call_id']})"
        if m.get("name"):
            head += f" name={m['name']}"
        content = (m.get("content") or "").splitlines() or [""]
        lines.append(f"{head}: {content[0]}")
        lines.extend(f"      {more}" for more in content[1:])
        for c in m.get("tool_calls") or ():
            args = c.get("raw_arguments")
            if args is None:
                args = json.dumps(c.get("arguments") or {}, ensure_ascii=False, sort_keys=True)
            lines.append(f"      -> {c['name']}({args}) id={c['id']}")
    for tool in request.get("tools") or ():
        name = tool.get("function", {}).get("name", "?")
        lines.append(f"tool {name}: {json.dumps(tool, ensure_ascii=False, sort_keys=True)}")
    return lines


class ReplayModel(SyncModel):
    """Answers from a recording: the reply recorded for an equal request (messages, tools).

    Requests are matched in recorded order first, then anywhere unused, so a conversation
    that repeats itself still gets its replies in order. ``.calls`` holds every request made;
    ``.assert_complete()`` fails if recorded exchanges were not replayed.
    """

    __slots__ = ("calls", "exchanges", "path", "used")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.exchanges = load_recording(path)
        self.used = [False] * len(self.exchanges)
        self.calls: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        return self.used.count(False)

    def complete(
        self, messages: Sequence[Message], tools: ToolSchemas = (), *,
        on_delta: DeltaCallback | None = None,
    ) -> Message:
        request = json.loads(json.dumps(wire_request(messages, tools)))  # as the file has it
        self.calls.append(request)
        unused = [i for i, used in enumerate(self.used) if not used]
        for i in unused:
            if self.exchanges[i]["request"] == request:
                self.used[i] = True
                reply = Message.from_dict(self.exchanges[i]["reply"])
                if on_delta is not None and reply.text:
                    on_delta(reply.text)
                return reply
        raise ScriptError(self._mismatch(request, unused))

    def _mismatch(self, request: dict[str, Any], unused: list[int]) -> str:
        call = len(self.calls)
        where = f"ReplayModel({str(self.path)!r}), model call {call}"
        if not unused:
            return (f"{where}: the recording has {len(self.exchanges)} exchanges and all were "
                    f"replayed; nothing recorded for this request:\n"
                    + "\n".join(request_lines(request)))
        now = request_lines(request)
        # The exchange it should have been: the next in recorded order, unless another
        # unused one is clearly closer.
        best = max(unused, key=lambda i: (
            difflib.SequenceMatcher(None, request_lines(self.exchanges[i]["request"]), now).ratio(),
            -i,
        ))
        recorded = request_lines(self.exchanges[best]["request"])
        diff = "\n".join(difflib.unified_diff(
            recorded, now, f"recorded exchange {best + 1}", f"model call {call}", lineterm="",
        ))
        return (f"{where}: the request differs from every unused recorded exchange "
                f"(re-record if the change is intended). Closest is exchange {best + 1} of "
                f"{len(self.exchanges)}; - recorded, + requested now:\n{diff}")

    def assert_complete(self) -> None:
        """Fail if recorded exchanges were not replayed."""
        if self.remaining:
            first = self.used.index(False)
            raise AssertionError(
                f"ReplayModel({str(self.path)!r}): {self.remaining} of {len(self.exchanges)} "
                f"recorded exchanges were not replayed (first: exchange {first + 1}, after "
                f"{len(self.calls)} model calls)"
            )

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, {len(self.exchanges)} exchanges)"


def replay_or_record(
    path: str | os.PathLike[str], model: Model | None = None, *, record: bool | None = None,
) -> Model:
    """A ``ReplayModel`` of ``path`` when it exists, else a ``RecordingModel`` of ``model``.

    ``record=True`` (or the environment variable ``CONVO_RECORD=1`` when ``record`` is None)
    records afresh even when the file exists.
    """
    if record is None:
        record = os.environ.get("CONVO_RECORD", "") not in ("", "0")
    if not record and Path(path).exists():
        return ReplayModel(path)
    if model is None:
        raise ScriptError(f"no recording at {str(path)!r} and no model to record one with")
    return RecordingModel(model, path)
