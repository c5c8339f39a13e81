"""A cassette: the model calls of an evaluation, recorded on the first run and replayed after.

One JSON file holds, for each run (``"<scenario> #<n>"``), the calls made in it, each with its
role (``bot``, ``user`` or ``judge``), the model's name, the request (messages and tool
schemas, as ``convo.models._recording`` writes them) and the reply. A call is answered from
the first unused recorded call of its run with the same role, model and request; a call the
cassette lacks is made live and added (``.added`` lists them), unless the cassette is
``frozen``, when it is a ``CassetteMiss`` that says what changed. When the evaluation ends,
``save()`` rewrites the file with what the runs used, in order: a changed prompt leaves no
stale calls behind.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from ..._errors import ScriptError
from ..._messages import Message
from ...models._base import DeltaCallback, Model, ToolSchemas
from ...models._recording import request_lines, wire_request

FORMAT: Final = "convo.cassette"
FORMAT_VERSION: Final = 1

Exchange = dict[str, Any]
LiveModel = Model | Callable[[], Model] | None


class CassetteMiss(ScriptError):
    """A frozen cassette was asked for a call it does not hold."""


def model_label(model: Any) -> str:
    """The name a model is recorded under: an OpenAI model's name, else its class's."""
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def _run_order(key: str) -> tuple[str, int]:
    name, _, n = key.rpartition(" #")
    return (name, int(n)) if n.isdigit() else (key, 0)


class _Tape:
    """The calls of one run: those recorded, which were used, and what the run kept."""

    __slots__ = ("kept", "recorded", "used")

    def __init__(self, recorded: list[Exchange]) -> None:
        self.recorded = recorded
        self.used = [False] * len(recorded)
        self.kept: list[Exchange] = []

    def take(self, role: str, label: str, request: dict[str, Any]) -> Exchange | None:
        for i, exchange in enumerate(self.recorded):
            if not self.used[i] and exchange.get("role") == role \
                    and exchange.get("model") == label and exchange.get("request") == request:
                self.used[i] = True
                self.kept.append(exchange)
                return exchange
        return None

    def unused(self, role: str) -> list[Exchange]:
        return [e for i, e in enumerate(self.recorded)
                if not self.used[i] and e.get("role") == role]


class Cassette:
    """The recorded calls of an evaluation, in the file ``path`` (created when missing)."""

    def __init__(self, path: str | os.PathLike[str], *, frozen: bool = False) -> None:
        self.path = Path(path)
        self.frozen = frozen
        self.exists = self.path.exists()
        self.runs: dict[str, list[Exchange]] = _load(self.path) if self.exists else {}
        if frozen and not self.exists:
            raise CassetteMiss(f"--frozen: there is no cassette at {self.path} to replay; "
                               "record one with a run without --frozen")
        self.tapes: dict[str, _Tape] = {}
        self.replayed = 0
        self.added: list[str] = []
        self.misses: dict[str, list[str]] = {}  # run -> what a frozen cassette lacked

    def tape(self, run: str) -> _Tape:
        if run not in self.tapes:
            self.tapes[run] = _Tape(list(self.runs.get(run, [])))
        return self.tapes[run]

    def model(self, run: str, role: str, live: LiveModel, label: str | None = None
              ) -> CassetteModel:
        """A model for ``role`` in ``run`` that answers from this cassette, or from ``live``
        (a model, or a function that builds one when first needed)."""
        return CassetteModel(self, run, role, live, label or model_label(live))

    def changed(self) -> bool:
        return bool(self.added) or any(
            tape.kept != self.runs.get(run, []) for run, tape in self.tapes.items())

    def save(self) -> bool:
        """Write what the runs used (and the runs this evaluation did not make, unchanged);
        False when there was nothing new to write (or the cassette is frozen)."""
        if self.frozen or not self.changed():
            return False
        runs = dict(self.runs)
        runs.update({run: tape.kept for run, tape in self.tapes.items()})
        ordered = {key: runs[key] for key in sorted(runs, key=_run_order)}
        doc = {"format": FORMAT, "version": FORMAT_VERSION, "runs": ordered}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
        return True

    def summary(self) -> str:
        """One line: what was replayed and what was recorded live."""
        replayed = f"replayed {self.replayed} model call{'s' * (self.replayed != 1)}"
        if not self.added:
            return f"cassette {self.path}: {replayed}"
        new = "a new cassette" if not self.exists else (
            f"not in the cassette, so made live and added: {', '.join(self.added[:3])}"
            + (f" and {len(self.added) - 3} more" if len(self.added) > 3 else ""))
        return f"cassette {self.path}: {replayed}, recorded {len(self.added)} ({new})"

    def miss(self, run: str, role: str, label: str, call: int, request: dict[str, Any]
             ) -> CassetteMiss:
        """The error of a frozen cassette asked for a call it lacks: what changed."""
        where = f"cassette {self.path}, run {run!r}, {role} call {call} (model {label!r})"
        if run not in self.runs:
            return CassetteMiss(f"{where}: the cassette has no run {run!r} (a scenario or a "
                                "repeat added since it was recorded?)")
        unused = self.tape(run).unused(role)
        same = [e for e in unused if e.get("request") == request]
        if same:
            return CassetteMiss(f"{where}: the {role} model changed: recorded "
                                f"{same[0].get('model')!r}, now {label!r}")
        if not unused:
            return CassetteMiss(f"{where}: the run recorded no further {role} call")
        now = request_lines(request)
        best = max(unused, key=lambda e: difflib.SequenceMatcher(
            None, request_lines(e["request"]), now).ratio())
        return CassetteMiss(f"{where}: the request changed; - recorded, + requested now:\n"
                            + "\n".join(first_difference(request_lines(best["request"]), now)))


def first_difference(recorded: list[str], now: list[str]) -> list[str]:
    """The first run of changed lines (``-`` recorded, ``+`` now), without the unchanged
    lines around it (every tool's schema, say); a last line counts the changes after it."""
    blocks = [op for op in difflib.SequenceMatcher(None, recorded, now,
                                                   autojunk=False).get_opcodes()
              if op[0] != "equal"]
    if not blocks:
        return []
    _, a1, a2, b1, b2 = blocks[0]
    lines = [f"-{line}" for line in recorded[a1:a2]] + [f"+{line}" for line in now[b1:b2]]
    more = sum(max(a2 - a1, b2 - b1) for _, a1, a2, b1, b2 in blocks[1:])
    if more:
        lines.append(f"(and {more} more changed line{'s' * (more != 1)} after it)")
    return lines


def _load(path: Path) -> dict[str, list[Exchange]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable cassette ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not a convo cassette (expected format {FORMAT!r})")
    if not isinstance(doc.get("version"), int) or doc["version"] > FORMAT_VERSION:
        raise ValueError(f"{path}: cassette version {doc.get('version')!r} is newer than this "
                         f"convo reads (up to {FORMAT_VERSION}); upgrade convo")
    runs: dict[str, list[Exchange]] = doc.get("runs") or {}
    return runs


class CassetteModel:
    """A model that answers from a cassette, and asks its live model what it lacks."""

    __slots__ = ("_live", "calls", "cassette", "label", "role", "run")

    def __init__(self, cassette: Cassette, run: str, role: str, live: LiveModel,
                 label: str) -> None:
        self.cassette, self.run, self.role, self.label = cassette, run, role, label
        self._live = live
        self.calls = 0

    def live(self) -> Model:
        if self._live is None:
            raise ScriptError(f"cassette {self.cassette.path}: no {self.role} model to record "
                              f"run {self.run!r} with")
        if not callable(getattr(self._live, "acomplete", None)):
            self._live = self._live()  # type: ignore[operator]
        return self._live  # type: ignore[return-value]

    def _replay(self, messages: Sequence[Message], tools: ToolSchemas,
                on_delta: DeltaCallback | None) -> tuple[dict[str, Any], Message | None]:
        self.calls += 1
        request = json.loads(json.dumps(wire_request(messages, tools)))  # as the file has it
        exchange = self.cassette.tape(self.run).take(self.role, self.label, request)
        if exchange is None:
            if self.cassette.frozen:
                miss = self.cassette.miss(self.run, self.role, self.label, self.calls, request)
                self.cassette.misses.setdefault(self.run, []).append(str(miss))
                raise miss
            return request, None
        self.cassette.replayed += 1
        reply = Message.from_dict(exchange["reply"])
        if on_delta is not None and reply.text:
            on_delta(reply.text)
        return request, reply

    def _add(self, request: dict[str, Any], reply: Message) -> Message:
        exchange = {"role": self.role, "model": self.label, "request": request,
                    "reply": reply.to_dict()}
        self.cassette.tape(self.run).kept.append(exchange)
        self.cassette.added.append(f"{self.run!r} {self.role} call {self.calls}")
        return reply

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        request, reply = self._replay(messages, tools, on_delta)
        if reply is not None:
            return reply
        return self._add(request, self.live().complete(messages, tools, on_delta=on_delta))

    async def acomplete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                        on_delta: DeltaCallback | None = None) -> Message:
        request, reply = self._replay(messages, tools, on_delta)
        if reply is not None:
            return reply
        live = await self.live().acomplete(messages, tools, on_delta=on_delta)
        return self._add(request, live)

    def __repr__(self) -> str:
        return f"CassetteModel({self.run!r}, {self.role}, {self.label!r})"
