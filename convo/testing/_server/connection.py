"""The fake server's HTTP/1.1: read requests from a connection, write responses (keep-alive,
chunked SSE, delays, replies cut off). Standard library asyncio streams only.

``serve`` knows nothing about Chat Completions: it hands each request to a ``route``
function and writes back the ``Response`` it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from .replies import Response, phrase

Route = Callable[[str, str, bytes, Mapping[str, str]], Response]
"""``route(method, path, body, headers) -> Response`` (header names in lower case)."""

LIMIT = 1 << 20  # the longest request head accepted


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                route: Route) -> None:
    """Answer requests on one connection until the client closes it (or sends garbage)."""
    try:
        while await _serve_one(reader, writer, route):
            pass
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            asyncio.CancelledError, ValueError):
        pass  # the client went away, sent garbage, or the server is closing
    finally:
        writer.close()


async def _serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     route: Route) -> bool:
    """Answer one request; whether the connection stays open for another."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return False  # closed between requests: the normal end of keep-alive
    lines = head.decode("latin-1").split("\r\n")
    method, path, version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    raw = await reader.readexactly(int(headers.get("content-length") or 0))
    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    response = route(method, path, raw, headers)
    if response.delay_s:
        await asyncio.sleep(response.delay_s)
    if not await write(writer, response, keep_alive):
        return False
    return keep_alive


def _head(response: Response, keep_alive: bool) -> bytes:
    headers = {} if response.headers is None else dict(response.headers)
    lines = [f"HTTP/1.1 {response.status} {phrase(response.status)}",
             "Server: convo-OpenAIServer"]
    if not any(name.lower() == "content-type" for name in headers):
        lines.append(f"Content-Type: {response.content_type}")
    if response.events is None:
        lines.append(f"Content-Length: {len(response.body)}")
    else:
        lines += ["Cache-Control: no-cache", "Transfer-Encoding: chunked"]
    if not keep_alive:
        lines.append("Connection: close")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write(writer: asyncio.StreamWriter, response: Response, keep_alive: bool) -> bool:
    """Write a response; False when it was cut off (the connection is then dropped)."""
    head = _head(response, keep_alive)
    if response.events is None:
        if response.cut is not None:
            writer.write(head + response.body[: len(response.body) // 2])
            await writer.drain()
            return False
        writer.write(head + response.body)
        await writer.drain()
        return True
    writer.write(head)
    for sent, event in enumerate(response.events):
        if response.cut is not None and sent >= response.cut:
            await writer.drain()
            return False
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        await writer.drain()  # one network write per chunk, as a real stream arrives
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True
