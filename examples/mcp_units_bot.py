"""A bot whose tools come from an MCP server: ``mcp_units_server.py``, started as a
subprocess and spoken to over stdio (install the extra: ``pip install -e ".[mcp]"``).

``MCPServer.stdio(...)`` describes the server, and the server goes in the ``ToolingTemplate``'s
tool list like any tool: the first turn starts it and lists its tools (once per process; here
with the prefix ``units_``). Every step is bounded by ``timeout``: a server that hangs or dies
gives the model an error result naming the server, and the conversation goes on; one that
cannot start leaves that turn without its tools and is tried again next turn. The subprocess
is stopped by ``runner.close()`` (or ``units.close()``, a ``with units:`` block, or at exit).
See docs/mcp.md.

Run it: ``python examples/mcp_units_bot.py`` (offline, on the mock model below), or with a
real model: ``OPENAI_API_KEY=... convo run examples/mcp_units_bot.py``.
"""

import sys
from pathlib import Path

from convo import (
    LinearTemplate,
    LoopTemplate,
    MCPServer,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)

units = MCPServer.stdio(sys.executable, [str(Path(__file__).with_name("mcp_units_server.py"))],
                        prefix="units_", timeout=20)

template = LinearTemplate([
    SystemTemplate("You convert units. Use the tools; never convert in your head."),
    LoopTemplate([UserTemplate(), ToolingTemplate([units])]),
])

demo_input = ["How many miles is a marathon (42.195 km)?", "And 20 C in F?"]
mock_model = MockModel([
    "{units_convert(value=42.195, from_unit='km', to_unit='mi')}",
    "A marathon is about 26.22 miles.",
    "{units_convert(value=20, from_unit='C', to_unit='F')}",
    "20 C is 68 F.",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
