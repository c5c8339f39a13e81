"""A support bot that looks at a customer's screenshot, and a tool that returns an image.

The first message carries an image (``UserTemplate`` content may hold parts and paths of
files); the ``capture_error_page`` tool returns text and an ``Image``, which the model sees in
its next call (on Chat Completions, as a user message right after the tool results). The
chat shows each image as a placeholder line such as ``[image: screenshot.png, 74 B]``.

Run it: ``convo run examples/vision_support.py`` (offline, on its mock model), or with a
vision model: ``OPENAI_API_KEY=... convo run examples/vision_support.py -m gpt-4o-mini``.
In ``convo chat``, ``/attach PATH`` (or ``convo chat -a PATH``) attaches a file yourself.
"""

import struct
import zlib

from convo import (
    Image,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    Text,
    ToolingTemplate,
    UserTemplate,
    tool,
)


def tiny_png(red: int, green: int, blue: int) -> bytes:
    """A 1x1 PNG of one colour (a real screenshot would come from a file: Image.from_path)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    pixels = zlib.compress(bytes([0, red, green, blue]))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))


SCREENSHOT = Image(tiny_png(200, 30, 30), media_type="image/png", filename="screenshot.png")


@tool
def capture_error_page(order: str) -> list[object]:
    """Capture the error page the shop shows for an order.

    Args:
        order: The order number.
    """
    page = Image(tiny_png(250, 250, 250), media_type="image/png", filename=f"{order}.png")
    return [Text(f"The error page of order {order}:"), page]


template = LinearTemplate([
    SystemTemplate("You help the shop's customers. Look at what they send you."),
    UserTemplate([Text("My payment fails, see my screenshot: "), SCREENSHOT]),
    LoopTemplate([ToolingTemplate([capture_error_page]), UserTemplate()]),
])

demo_input = ["Thanks, that fixed it."]

mock_model = MockModel([
    "{capture_error_page(order='A-1001')}",
    "Both pages show the card was declined: please try another card.",
    "Glad to hear it!",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
