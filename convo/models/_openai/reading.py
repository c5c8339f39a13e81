"""Reading one reply's bytes into a ``Message``, under a deadline; every failure a ModelError.

``OpenAIModel`` lets the SDK send the request (retries, HTTP errors) and reads the body itself,
piece by piece as it arrives. Every piece is checked against the call's deadline, so a reply
that trickles (a byte, or an SSE keep-alive comment, at a time) is cut off at the deadline,
where the SDK's timeout (an idle timeout per read) never fires. Decoding the body or the
server-sent events here means that no byte, line, JSON value or shape a server sends escapes
as anything but a ``ModelError`` naming the server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final

from ..._errors import ContextLengthError, ModelError
from ..._messages import Message
from .._overflow import context_length_hint
from .._responded import report
from . import wire_responses as wire_responses
from .wire import StreamAccumulator, WireError, as_dict, identity, message_from_response

MAX_BODY: Final = 64 << 20  # a reply larger than this is not a chat reply
_CHECK: Final = "Check that the base URL points at an OpenAI-compatible /v1 endpoint"


class Deadline:
    """A point in time ``seconds`` from now (``None``: never)."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


class EventDecoder:
    """Server-sent events from bytes: ``feed(piece)`` gives the ``data`` of each complete event.

    Comments (keep-alives) and other fields are skipped; ``data: [DONE]`` ends the stream
    (``done``). Lines that are not UTF-8 are a ``WireError``.
    """

    __slots__ = ("_buffer", "_data", "done")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self.done = False

    def feed(self, piece: bytes) -> list[str]:
        self._buffer += piece
        events: list[str] = []
        while not self.done:
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end]).rstrip(b"\r")
            del self._buffer[: end + 1]
            event = self._line(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) > MAX_BODY:
            raise WireError(f"an SSE line longer than {MAX_BODY >> 20} MB")
        return events

    def _line(self, line: bytes) -> str | None:
        if not line:  # a blank line ends an event
            data, self._data = "\n".join(self._data), []
            if data == "[DONE]":
                self.done = True
                return None
            return data or None
        if line.startswith(b":"):
            return None
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireError(f"the stream is not UTF-8 text ({exc}): {line[:80]!r}") from None
        field, _, value = text.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None


def _json(data: bytes | str, what: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise WireError(f"{what} is not JSON ({type(exc).__name__}: {str(exc)[:100]}): "
                        f"{data[:200]!r}") from None


class ReplyReader:
    """Turns the pieces of one reply (a JSON body, or SSE chunks) into its assistant Message.

    ``feed(piece)`` returns the texts to show now; ``finish()`` the Message. Every failure is a
    ``ModelError`` naming ``where`` (the server and model): malformed replies, the deadline,
    a connection that broke off (``broke(exc)``). ``api`` is the wire format, ``"chat"`` or
    ``"responses"``; on the latter, streamed reasoning summaries go to ``on_reasoning``.
    """

    __slots__ = ("_accumulator", "_body", "_decoder", "_parse", "deadline", "stream", "where")

    def __init__(self, where: str, *, stream: bool, deadline: Deadline, api: str = "chat",
                 on_reasoning: Callable[[str], None] | None = None) -> None:
        self.where = where
        self.stream = stream
        self.deadline = deadline
        self._body = bytearray()
        self._decoder = EventDecoder()
        self._accumulator: StreamAccumulator | wire_responses.ResponsesAccumulator
        if api == "responses":
            self._accumulator = wire_responses.ResponsesAccumulator(on_reasoning)
            self._parse: Callable[[Any], Message] = wire_responses.message_from_response
        else:
            self._accumulator = StreamAccumulator()
            self._parse = message_from_response

    @property
    def done(self) -> bool:
        return self._decoder.done

    def feed(self, piece: bytes) -> list[str]:
        if self.deadline.passed:
            raise self.timed_out()
        if not self.stream:
            self._body += piece
            if len(self._body) > MAX_BODY:
                raise self._malformed(WireError(f"the reply is larger than {MAX_BODY >> 20} MB"))
            return []
        try:
            return [text for data in self._decoder.feed(piece)
                    if (text := self._accumulator.add(_json(data, "an SSE event's data")))]
        except Exception as exc:  # whatever the server sent, said as a malformed reply
            raise self._malformed(exc) from exc

    def chunk(self, chunk: Any) -> str:
        """Add a chunk the SDK already decoded (an injected client without raw responses)."""
        try:
            return self._accumulator.add(chunk)
        except Exception as exc:
            raise self._malformed(exc) from exc

    def finish(self) -> Message:
        if not self.stream:
            try:
                body = _json(bytes(self._body), "the reply body")
            except WireError as exc:
                raise self._malformed(exc) from exc
            return self.parsed(body)
        accumulator = self._accumulator
        if not accumulator.complete:
            if not accumulator.chunks:
                raise ModelError(
                    f"the stream from {self.where} ended without sending any chunk. Check the "
                    "server's log for why it did not answer")
            end = getattr(accumulator, "END", "a finish_reason")
            raise ModelError(
                f"the stream from {self.where} ended after {accumulator.chunks} chunks "
                f"without {end}: the reply was cut off. Check the server and the "
                "network; try again")
        try:
            message = accumulator.message()
        except Exception as exc:
            raise self._malformed(exc) from exc
        report(*accumulator.identity)
        return message

    def parsed(self, response: Any) -> Message:
        """The Message of a whole (non-streamed) response, as a dict or an SDK object."""
        try:
            d = as_dict(response)
            message = self._parse(d)
        except Exception as exc:
            raise self._malformed(exc) from exc
        report(*identity(d))
        return message

    def _malformed(self, exc: BaseException) -> ModelError:
        if isinstance(exc, ModelError):
            return exc
        if isinstance(exc, wire_responses.ReplyFailed):  # the server's own words, not ours
            hint = context_length_hint(str(exc))
            if hint is not None:
                return ContextLengthError(f"{self.where}: {str(exc)[:500]}. {hint}")
            return ModelError(f"{self.where}: {str(exc)[:500]}. Check the server's log; "
                              "try again")
        said = str(exc) if isinstance(exc, WireError) else f"{type(exc).__name__}: {exc}"
        kind = "malformed streamed reply" if self.stream else "malformed reply"
        return ModelError(f"{kind} from {self.where}: {said[:500]}. {_CHECK}")

    def timed_out(self) -> ModelError:
        got = (f"{self._accumulator.chunks} chunks" if self.stream
               else f"{len(self._body)} bytes")
        seconds = self.deadline.seconds
        limit = f"the {seconds:g} s timeout" if seconds is not None else "the SDK's timeout"
        return ModelError(
            f"the reply from {self.where} did not finish within {limit} (it had sent {got}). "
            "Check the server, or raise timeout=")

    def broke(self, exc: BaseException) -> ModelError:
        """The connection failed while the reply was being read."""
        if self.deadline.passed or "timeout" in type(exc).__name__.lower():
            return self.timed_out()
        got = (f"{self._accumulator.chunks} chunks" if self.stream
               else f"{len(self._body)} bytes")
        return ModelError(
            f"no HTTP status: the reply from {self.where} broke off after {got} "
            f"({type(exc).__name__}: {exc}). Check the server and the network; try again")
