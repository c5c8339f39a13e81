"""MCPTool: one tool of an MCP server, as an ordinary convo ``Tool``; and what its results
look like to the model.

The server describes its tools with JSON schemas and checks their arguments itself, so an
``MCPTool`` sends the server's schema as is and only checks that the arguments are an object
with the required keys (the model hears about anything else from the server's error).
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..._errors import ToolArgumentError
from ..._parts import Audio, Document, Image, Part, normalize
from .._base import Tool
from .._context import ToolContext


class ToolServer(Protocol):
    """What a tool needs of its server (``MCPServer``)."""

    @property
    def name(self) -> str: ...

    prefix: str | None
    needs_approval: Any

    async def call(self, remote: str, arguments: dict[str, Any], call_id: str | None = None
                   ) -> str | tuple[Part, ...]: ...

    def call_blocking(self, remote: str, arguments: dict[str, Any], call_id: str | None = None
                      ) -> str | tuple[Part, ...]: ...


def model_name(name: str) -> str:
    """A name the model APIs accept (letters, digits, ``_`` and ``-``, at most 64): MCP allows
    more (``files.read``); the server is still called by its own name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "_"


def parameters_of(input_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The server's input schema as an OpenAI function's ``parameters`` (always an object)."""
    schema = {k: v for k, v in (input_schema or {}).items() if k != "$schema"}
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


class MCPTool(Tool):
    """A tool of an ``MCPServer``; called through the server's connection."""

    def __init__(self, server: ToolServer, remote_name: str, description: str | None,
                 input_schema: Mapping[str, Any] | None, *, listed_late: bool = False) -> None:
        super().__init__()
        self.server = server
        #: The server listed it only after its first listing (``tools/list_changed``): a turn
        #: that finds its name taken leaves it out, with a warning, instead of failing
        #: (``convo.templates._toolsets``) — the author could not have seen it coming.
        self.listed_late = listed_late
        self.remote_name = remote_name
        self.name = model_name(f"{server.prefix or ''}{remote_name}")
        self.description = description or ""
        self.parameters = parameters_of(input_schema)

    @property
    def toolset(self) -> ToolServer:
        """The server: what ``Runner.close()`` closes for a tool given as ``[*server]``."""
        return self.server

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def signature_text(self) -> str:
        required = set(self.parameters.get("required") or ())
        props = self.parameters.get("properties") or {}
        parts = []
        for key, spec in props.items():
            kind = spec.get("type", "any") if isinstance(spec, Mapping) else "any"
            parts.append(f"{key} ({kind}{'' if key in required else ', optional'})")
        return ", ".join(parts) or "no arguments"

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(args, Mapping):
            raise ToolArgumentError(f"the arguments for {self.name!r} must be a JSON object, "
                                    f"got {args!r}; send an object with {self.signature_text()}")
        missing = [k for k in self.parameters.get("required") or () if k not in args]
        if missing:
            names = ", ".join(repr(k) for k in missing)
            raise ToolArgumentError(f"missing argument(s) {names} for {self.name!r}; send an "
                                    f"object with {self.signature_text()}")
        return dict(args)

    def requires_approval(self, args: dict[str, Any]) -> bool:
        rule = self.server.needs_approval
        return bool(rule(self.remote_name, args)) if callable(rule) else bool(rule)

    #: A blocking run calls ``invoke``, which waits for the server's loop, instead of running
    #: ``ainvoke`` in an event loop of its own.
    runs_blocking = True
    #: The call's id goes to the server, in the request's ``_meta`` (``CALL_ID_META``).
    takes_context = True

    async def _execute(self, args: dict[str, Any], context: ToolContext | None = None
                       ) -> str | tuple[Part, ...]:
        return await self.server.call(self.remote_name, args, _call_id(context))

    def invoke(self, args: dict[str, Any], context: ToolContext | None = None
               ) -> str | tuple[Part, ...]:
        return self.server.call_blocking(self.remote_name, args, _call_id(context))

    def __repr__(self) -> str:
        return f"<MCPTool {self.name!r} of MCP server {self.server.name!r}>"


def _call_id(context: ToolContext | None) -> str | None:
    return None if context is None else context.call_id


class BadResult(ValueError):
    """A server's result that cannot become a tool message (its data is not base64)."""


def result_content(result: Any) -> str | tuple[Part, ...]:
    """The tool message of an MCP ``CallToolResult``, its content in order: text as text
    (several text parts in a row joined with a newline); images, audio and embedded files as
    ``Image``, ``Audio`` and ``Document`` parts (API §16); an embedded text resource as its
    text, a link as ``[resource URI]``; ``structuredContent`` as JSON when there is no text.
    ``BadResult`` when a part's data is not base64."""
    blocks: Sequence[Any] = result.content or ()
    if len(blocks) == 1 and getattr(blocks[0], "type", None) == "text":
        return str(blocks[0].text)  # the most frequent result, the same as the loop below
    items: list[str | Part] = []
    for block in blocks:
        item = _block(block)
        if isinstance(item, str) and items and isinstance(items[-1], str):
            items[-1] = f"{items[-1]}\n{item}"
        else:
            items.append(item)
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(isinstance(i, str) for i in items):
        items.insert(0, json.dumps(structured, ensure_ascii=False))
    return normalize(items)


def _block(block: Any) -> str | Part:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        cls = Image if kind == "image" else Audio
        return cls(_decoded(block.data, f"the {kind} ({block.mime_type})"),
                   media_type=block.mime_type)
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        return _file(str(resource.uri), resource.mime_type,
                     _decoded(resource.blob, f"the resource {resource.uri}"))
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{kind} content, not shown]"


def _file(uri: str, media_type: str | None, data: bytes) -> Part:
    """An embedded file, as the part its media type says."""
    filename = posixpath.basename(urlsplit(uri).path) or None
    kind = (media_type or "").partition("/")[0]
    cls = Image if kind == "image" else Audio if kind == "audio" else Document
    return cls(data, media_type=media_type, filename=filename)


def _decoded(data: str, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadResult(f"{what} in the result is not valid base64 ({exc})") from None
