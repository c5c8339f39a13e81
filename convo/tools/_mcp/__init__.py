"""Tools from MCP servers (API §17; docs/mcp.md): ``MCPServer`` and its ``MCPTool``s.

Importing this package does not import the ``mcp`` SDK: a connection does, when it opens.
"""

from .server import MCPServer
from .tool import MCPTool

__all__ = ["MCPServer", "MCPTool"]
