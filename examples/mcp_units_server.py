"""A small MCP server (written with the ``mcp`` SDK) that converts units: the server that
``mcp_units_bot.py`` uses. Any MCP client can use it too:
``python examples/mcp_units_server.py`` speaks MCP on stdin and stdout.
"""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("units")

FACTORS = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("kg", "lb"): 2.204623,
           ("lb", "kg"): 0.453592}


@server.tool()
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units: km and mi, kg and lb, C and F."""
    if (from_unit, to_unit) == ("C", "F"):
        return f"{value:g} C = {value * 9 / 5 + 32:.1f} F"
    if (from_unit, to_unit) == ("F", "C"):
        return f"{value:g} F = {(value - 32) * 5 / 9:.1f} C"
    factor = FACTORS.get((from_unit, to_unit))
    if factor is None:
        raise ToolError(f"cannot convert {from_unit} to {to_unit}; known: km, mi, kg, lb, C, F")
    return f"{value:g} {from_unit} = {value * factor:.2f} {to_unit}"


@server.tool()
def units() -> list[str]:
    """The units this server knows."""
    return ["km", "mi", "kg", "lb", "C", "F"]


if __name__ == "__main__":
    server.run()
