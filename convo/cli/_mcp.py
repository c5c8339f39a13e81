"""``convo mcp FILE[:NAME]``: a bot file's conversation as one MCP tool over stdio (API.md §25),
for desktop and IDE assistants that start MCP servers as commands.

The conversations run on the same engine as ``convo serve``'s, in this process, on ``--store``
(default ``memory``: they last as long as the process). Nothing but the protocol goes to
stdout; what the command says goes to stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._botfile import (
    UsageProblem,
    bot_bounds,
    bot_identity,
    choose_model,
    find_template,
    load_file,
    split_target,
)
from ._options import add_served_model_options, name

#: Where a user approves a call when the MCP client cannot ask them (no form elicitation).
APPROVE_HINT = ("; this MCP client did not declare form elicitation, so it cannot be asked "
                "here: use a client that supports elicitation, or serve the bot with convo "
                "serve and approve it on its chat page")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    mcp = sub.add_parser(
        "mcp", parents=[common], help="serve a template as an MCP tool over stdio",
        description="Serve the template NAME (default: template) from a Python file as one "
                    "MCP tool over stdio: the tool takes message and conversation_id (left "
                    "out: a new conversation), runs one turn and returns the reply. Approvals "
                    "are asked of the client through elicitation when it supports it.")
    mcp.add_argument("target", metavar="FILE[:NAME]")
    mcp.add_argument("--tool-name", type=name, metavar="NAME",
                     help="the tool's name (default: the file's title, else its stem; "
                          "characters outside A-Z a-z 0-9 _ . - become _)")
    mcp.add_argument("--store", default="memory", metavar="URL",
                     help="memory (default), sqlite:///PATH or postgresql://...: where the "
                          "conversations are kept")
    add_served_model_options(mcp, short=True)
    mcp.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    import asyncio

    from ..serve._mcp_face import BotTool, default_description, tool_name
    from ..serve._stores import open_store

    path, template_name = split_target(args.target)
    module = load_file(path)
    template = find_template(module, path, template_name)
    bounds = bot_bounds(module, path)
    bot, description = bot_identity(module, path)
    tool = BotTool(tool_name(args.tool_name or bot), description or default_description(bot))
    try:
        store = open_store(args.store)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    model, _ = choose_model(args, module, path)  # (it says which on stderr)
    asyncio.run(_serve(template, model, store, tool, bounds, args.max_messages))
    return 0


async def _serve(template: Any, model: Any, store: Any, tool: Any, bounds: dict[str, Any],
                 max_messages: int) -> None:
    from mcp.server.stdio import stdio_server

    from .._runner import Runner
    from ..serve._engine import Engine
    from ..serve._mcp_face import MCPFace
    from ..serve._stores.base import DEFAULT_OWNER, StoreError

    runner = Runner(model, template, raise_errors=False, max_messages=max_messages, **bounds)
    engine = Engine(runner, store)
    try:
        await store.open()
    except StoreError as exc:
        raise UsageProblem(str(exc)) from None

    async def owner(ctx: Any) -> str:  # one person at the other end of the pipe
        return DEFAULT_OWNER

    try:
        server = MCPFace(engine, tool, owner, approve_hint=APPROVE_HINT).server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        try:
            await runner.aclose()
        finally:
            await store.close()
