"""Parts of a message's content: ``Text``, ``Image``, ``Audio`` and ``Document`` (API §16).

A message whose content is only text keeps a plain ``str``; a message that carries an image,
a sound or a file holds a tuple of parts. Each part is a frozen value that knows its JSON:
``{"type": "text", "text"}``, ``{"type": "image", "media_type", "data": <base64>}`` or
``{"type": "image", "url"}`` (the same for ``audio`` and ``document``, with ``filename``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

# The standard library's table has no entry for a few common types on some systems.
_MEDIA_TYPES: Final = {".wav": "audio/wav", ".mp3": "audio/mpeg", ".webp": "image/webp",
                       ".md": "text/markdown"}


DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024
"""The default limit of one attachment (``--max-attachment-bytes``): 10 MiB."""


class PartError(ValueError):
    """A part's JSON or value is malformed: says which part, what was expected and what came."""


def _optional_bytes(value: bytes | bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)


def _guess(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in _MEDIA_TYPES:
        return _MEDIA_TYPES[suffix]
    return mimetypes.guess_type(path.name, strict=False)[0]


@attrs.frozen(slots=True, weakref_slot=False)
class Text:
    """Text within a parts message."""

    text: str

    @property
    def type(self) -> str:
        return "text"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@attrs.frozen(slots=True, weakref_slot=False)
class _Binary:
    """What the binary parts share: inline ``data`` (bytes) or a ``url``, and a media type."""

    data: bytes | None = attrs.field(default=None, converter=_optional_bytes, repr=False)
    url: str | None = attrs.field(default=None, kw_only=True)
    media_type: str | None = attrs.field(default=None, kw_only=True)
    # Not only documents: an image's file name is what a screen shows for it.
    filename: str | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of data= (bytes) or "
                             f"url=; got {'both' if self.data is not None else 'neither'}")

    @property
    def type(self) -> str:
        return type(self).__name__.lower()

    @property
    def size(self) -> int:
        """Bytes of inline data (0 for a part given by URL)."""
        return 0 if self.data is None else len(self.data)

    @property
    def digest(self) -> str | None:
        """The SHA-256 of the inline data, hex: how a store keeps each binary once."""
        return None if self.data is None else hashlib.sha256(self.data).hexdigest()

    @property
    def label(self) -> str:
        """A short name for screens: the file name, the URL, or the media type."""
        return self.filename or self.url or self.media_type or self.type

    def data_url(self) -> str:
        """A ``data:`` URL of the inline data (or the part's own URL)."""
        if self.data is None:
            return self.url or ""
        encoded = base64.b64encode(self.data).decode("ascii")
        return f"data:{self.media_type or 'application/octet-stream'};base64,{encoded}"

    def to_dict(self, *, inline: bool = True) -> dict[str, Any]:
        """The part's JSON; ``inline=False`` gives its data's ``sha256`` instead of the data
        (how a store keeps each binary once, in a table of its own)."""
        d: dict[str, Any] = {"type": self.type}
        if self.url is not None:
            d["url"] = self.url
        if self.media_type is not None:
            d["media_type"] = self.media_type
        if self.data is not None:
            if inline:
                d["data"] = base64.b64encode(self.data).decode("ascii")
            else:
                d["sha256"] = self.digest
        for extra in ("detail", "filename"):
            value = getattr(self, extra, None)
            if value is not None:
                d[extra] = value
        return d


@attrs.frozen(slots=True, weakref_slot=False)
class Image(_Binary):
    """An image: inline bytes or a URL; ``detail`` (``"low"``, ``"high"``, ``"auto"``) if set."""

    detail: str | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def from_path(cls, path: str | Path, *, detail: str | None = None,
                  max_bytes: int | None = None) -> Image:
        """The image in a file; over ``max_bytes`` is a ``PartError`` naming the file."""
        p = Path(path)
        return cls(read(p, max_bytes), media_type=_guess(p), filename=p.name, detail=detail)


@attrs.frozen(slots=True, weakref_slot=False)
class Audio(_Binary):
    """A sound, inline (``media_type`` such as ``audio/wav`` or ``audio/mpeg``)."""

    @classmethod
    def from_path(cls, path: str | Path, *, max_bytes: int | None = None) -> Audio:
        """The sound in a file; over ``max_bytes`` is a ``PartError`` naming the file."""
        p = Path(path)
        return cls(read(p, max_bytes), media_type=_guess(p), filename=p.name)


@attrs.frozen(slots=True, weakref_slot=False)
class Document(_Binary):
    """A file (a PDF, a text file ...): inline bytes or a URL, with its ``filename``."""

    @classmethod
    def from_path(cls, path: str | Path, *, max_bytes: int | None = None) -> Document:
        """The file's bytes; over ``max_bytes`` is a ``PartError`` naming the file."""
        p = Path(path)
        return cls(read(p, max_bytes), media_type=_guess(p), filename=p.name)


Part = Text | Image | Audio | Document
Content = str | tuple[Part, ...]
"""What a message holds: text, or parts."""
BINARY_KINDS: Final[dict[str, type[Image] | type[Audio] | type[Document]]] = {
    "image": Image, "audio": Audio, "document": Document,
}
PART_TYPES: Final = (Text, Image, Audio, Document)


def from_path(path: str | Path, *, max_bytes: int | None = None) -> Image | Audio | Document:
    """The part a file makes, by its media type: an image, a sound, or else a document."""
    p = Path(path)
    media_type = _guess(p) or ""
    if media_type.startswith("image/"):
        return Image.from_path(p, max_bytes=max_bytes)
    if media_type.startswith("audio/"):
        return Audio.from_path(p, max_bytes=max_bytes)
    return Document.from_path(p, max_bytes=max_bytes)


def read(path: Path, max_bytes: int | None) -> bytes:
    """A file's bytes, refused before reading when it is over ``max_bytes``."""
    if max_bytes is not None:
        size = path.stat().st_size
        if size > max_bytes:
            raise PartError(f"{path} is {human_size(size)} ({size} bytes), over the limit of "
                            f"{human_size(max_bytes)} ({max_bytes} bytes) for an attachment")
    return path.read_bytes()


def normalize(value: Any) -> str | tuple[Part, ...]:
    """Content as a message holds it: ``str``, or a tuple of parts with some non-text part.

    ``None`` is ``""``; a part or a list of parts (or of their JSON) becomes a tuple; plain
    strings in the list become ``Text``; a tuple of only text is joined into a ``str``.
    """
    if value is None:
        return ""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, PART_TYPES):
        value = (value,)
    if not isinstance(value, Iterable) or isinstance(value, bytes | bytearray | Mapping):
        raise TypeError(f"Message content must be a str or a sequence of parts (Text, Image, "
                        f"Audio, Document); got {type(value).__name__}")
    parts = tuple(_as_part(item, i) for i, item in enumerate(value))
    if all(type(p) is Text for p in parts):
        return "".join(p.text for p in parts)  # type: ignore[union-attr]
    return parts


def _as_part(item: Any, position: int) -> Part:
    if isinstance(item, PART_TYPES):
        return item
    if isinstance(item, str):
        return Text(item)
    if isinstance(item, Mapping):
        return part_from_dict(item, position)
    raise TypeError(f"content part {position + 1} must be a Text, Image, Audio or Document "
                    f"(or a str); got {type(item).__name__}")


def text_of(content: str | tuple[Part, ...]) -> str:
    """The text of content: the ``str`` itself, or its ``Text`` parts joined."""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, Text))


def binaries(content: str | tuple[Part, ...]) -> tuple[Image | Audio | Document, ...]:
    """The non-text parts of content (none for a ``str``)."""
    if isinstance(content, str):
        return ()
    return tuple(p for p in content if not isinstance(p, Text))


def part_from_dict(d: Mapping[str, Any], position: int = 0,
                   blobs: Mapping[str, bytes] | None = None) -> Part:
    """A part from its JSON; a malformed one is a ``PartError`` naming the part. ``blobs``
    (digest -> bytes) gives the data of a part stored by its ``sha256``."""
    where = f"content part {position + 1}"
    kind = d.get("type")
    if kind == "text":
        if not isinstance(d.get("text"), str):
            raise PartError(f"{where}: a text part needs a string 'text'; got {d.get('text')!r}")
        return Text(d["text"])
    cls = BINARY_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise PartError(f"{where}: expected a 'type' of 'text', 'image', 'audio' or "
                        f"'document'; got {kind!r}")
    options = {k: d[k] for k in ("url", "media_type", "detail", "filename")
               if d.get(k) is not None and k in attrs.fields_dict(cls)}
    for key, value in options.items():
        if not isinstance(value, str):
            raise PartError(f"{where}: '{key}' must be a string; got {value!r}")
    data = d.get("data")
    if data is None and blobs is not None and d.get("sha256") in blobs:
        return cls(blobs[d["sha256"]], **options)
    if (data is None) == ("url" not in options):
        article = "a" if kind == "document" else "an"
        raise PartError(f"{where}: {article} {kind} part needs exactly one of 'data' (base64) "
                        "or 'url'")
    try:
        raw = None if data is None else base64.b64decode(str(data), validate=True)
        return cls(raw, **options)
    except (binascii.Error, ValueError) as exc:
        raise PartError(f"{where}: 'data' of the {kind} part is not valid base64 ({exc})") from None


def content_to_json(content: str | tuple[Part, ...]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [p.to_dict() for p in content]


def shown(content: str | tuple[Part, ...]) -> str:
    """Content for a screen: its text, and each binary part as a placeholder line."""
    if isinstance(content, str):
        return content
    lines: list[str] = []
    for part in content:
        if type(part) is Text:
            if lines and not lines[-1].startswith("["):
                lines[-1] += part.text
            else:
                lines.append(part.text)
        else:
            lines.append(describe(part))
    return "\n".join(lines)


def describe(part: Part) -> str:
    """A one-line placeholder for screens: ``[image: shot.png, 212 kB]`` (never the data)."""
    if isinstance(part, Text):
        return part.text
    size = f", {human_size(part.size)}" if part.data is not None else ""
    return f"[{part.type}: {part.label}{size}]"


def human_size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{round(size / 1000)} kB"
    return f"{size / 1_000_000:.1f} MB"
