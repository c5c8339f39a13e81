"""``convo chat``: a plain chat with a model, no bot file needed.

::

    convo chat [-m MODEL] [-s SYSTEM] [--base-url URL] [--tools FILE] [--mcp FILE]... [-c]
               [--plain] [--no-log] [-a PATH]... [--max-attachment-bytes N]

The model is OpenAI's (or any OpenAI-compatible server's) when ``OPENAI_API_KEY`` or a base URL
is set; otherwise an offline stand-in that echoes what you type, and the command says so.
``--model smoke`` is the offline stand-in that calls the tools it is given (``_botfile.py``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._botfile import (
    SMOKE,
    UsageProblem,
    bot_context,
    info,
    load_file,
    openai_model,
    provider_model,
    smoke_model,
)
from ._options import conversation_options, positive_int

if TYPE_CHECKING:  # the chat's own modules are imported when it starts, not when the
    # parsers are built: `convo serve --help` needs none of them
    from .._parts import Audio, Document, Image
    from .._session import Session

#: How many messages of a continued chat are shown again before the prompt.
SHOWN_ON_CONTINUE = 10


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    chat = sub.add_parser(
        "chat", parents=[common, conversation_options()],
        help="chat with a model (no file needed)",
        description="Chat with a model in the terminal: OpenAI's when OPENAI_API_KEY is set, "
                    "an OpenAI-compatible server's with --base-url, else an offline mock that "
                    "echoes you. Type /help in the chat for its commands and keys.",
    )
    chat.add_argument("-s", "--system", metavar="SYSTEM", help="a system prompt")
    chat.add_argument("--tools", metavar="FILE",
                      help="a Python file whose tools (@tool functions, Tool objects, or a "
                           "list named tools) the model may call")
    chat.add_argument("--mcp", metavar="FILE", action="append", default=[],
                      help='an MCP config file ({"mcpServers": {...}}) whose servers\' tools '
                           "the model may call (repeatable)")
    chat.add_argument("-c", "--continue", dest="continue_", action="store_true",
                      help="continue the last chat kept in the local history")
    chat.add_argument("-a", "--attach", metavar="PATH", action="append", default=[],
                      help="attach a file (an image, a sound, a PDF...) to your first message; "
                           "may be repeated (in the chat: /attach PATH)")
    chat.add_argument("--max-attachment-bytes", type=positive_int, default=10 * 1024 * 1024,
                      metavar="N", help="refuse attachments over N bytes (default: 10485760, "
                                        "10 MiB)")
    # Not an option: `convo chat bot.py` is a common slip for `convo run bot.py` (main says so)
    chat.add_argument("file", nargs="?", help=argparse.SUPPRESS)
    chat.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    import attrs

    from .._messages import Message
    from .._resume import Resume
    from .._session import Session
    from .._terminal.conversation import Talk, hold
    from ..templates import AssistantTemplate, LoopTemplate, ToolingTemplate, UserTemplate
    from ..templates._base import Template

    if args.file is not None:
        raise UsageProblem(f"convo chat takes no bot file: to hold the conversation {args.file} "
                           f"defines, use convo run {args.file}")
    tools, context = _tools(args.tools) if args.tools else ([], None)
    attached = _attached(args.attach, args.max_attachment_bytes)
    servers = _servers(args.mcp)
    try:
        tools += _mcp_tools(servers)
        history_id, saved = _start(args)
        model, name = _model(args)
        reply: Template = ToolingTemplate(tools) if tools else AssistantTemplate()
        turn: list[Template] = [UserTemplate(), reply]
        template: Template = LoopTemplate(turn)  # type: ignore[arg-type]  # attrs' converter
        system = args.system if saved is None else _system_prompt(saved)
        session = Session([Message("system", system)] if system else [])
        if saved is not None:  # replayed as --resume replays a transcript: nothing done twice
            session.state, session.approvals = dict(saved.state), dict(saved.approvals)
            session.internal = dict(saved.internal)
            rest = attrs.evolve(saved, messages=list(saved.messages[len(session.messages):]))
            template = Resume(template, rest)
        talk = Talk(template=template, session=session, model=model, kind="chat",
                    model_name=name, history_id=history_id, context=context, saved=saved,
                    tools=tools, attached=attached,
                    max_attachment_bytes=args.max_attachment_bytes)
        return hold(args, talk, before=lambda printer: _show(printer, session, saved))
    finally:
        for server in servers:
            server.close()


def _servers(paths: Sequence[str]) -> list[Any]:
    """The MCP servers of the ``--mcp`` files (none is started yet)."""
    if not paths:
        return []
    from .._errors import DefinitionError
    from ..tools._mcp import MCPServer

    servers = []
    for path in paths:
        try:
            servers += MCPServer.from_config(path)
        except DefinitionError as exc:
            raise UsageProblem(f"--mcp: {exc}") from exc
    return servers


def _mcp_tools(servers: Sequence[Any]) -> list[Any]:
    """The tools of every server that starts; one that does not is named, and the chat goes
    on without it."""
    from .._errors import MCPServerError

    tools: list[Any] = []
    for server in servers:
        try:
            listed = server.tools()
        except MCPServerError as exc:
            info(f"warning: {exc}; chatting without its tools")
            continue
        info(f"MCP server {server.name!r}: {len(listed)} tools")
        tools += listed
    return tools


def _attached(paths: list[str], max_bytes: int) -> list[Image | Audio | Document]:
    """The files of ``-a``, read now: one that is missing or too big stops the command."""
    from .._parts import PartError, from_path

    parts = []
    for path in paths:
        try:
            parts.append(from_path(os.path.expanduser(path), max_bytes=max_bytes))
        except PartError as exc:
            raise UsageProblem(f"-a: {exc} (--max-attachment-bytes)") from None
        except OSError as exc:
            raise UsageProblem(f"-a: cannot read {path}: {exc.strerror or exc}") from None
    return parts


def _system_prompt(saved: Session) -> str | None:
    first = saved.messages[0] if saved.messages else None
    return first.text if first is not None and first.role == "system" else None


def _start(args: argparse.Namespace) -> tuple[int | None, Session | None]:
    """The conversation of the history to continue (-c), and what it saved."""
    if not args.continue_:
        return None, None
    if args.system:
        raise UsageProblem("-s/--system starts a new chat; -c continues the last one with "
                           "its own system prompt: give one or the other")
    if args.no_log:
        raise UsageProblem("-c continues a chat of the local history, which --no-log turns "
                           "off: give one or the other")
    from .._terminal.history import History
    from .._terminal.paths import data_dir

    history = History.open()
    try:
        last = history.last("chat")
    finally:
        history.close()
    if last is None:
        raise UsageProblem(f"-c: no chat in the history yet ({data_dir()}): start one with "
                           "convo chat")
    return last


def _show(printer: Any, session: Session, saved: Session | None) -> None:
    """The system prompt of a new chat; the last messages of a continued one (its replay is
    not shown again)."""
    if saved is None:
        for message in session.messages:
            printer.show(message)
        return
    printer.quiet_replay = True
    messages = saved.messages
    hidden = max(0, len(messages) - SHOWN_ON_CONTINUE)
    earlier = f" ({hidden} earlier not shown)" if hidden else ""
    printer.note(f"continuing the last chat: {len(messages)} messages{earlier}")
    for message in messages[hidden:]:
        printer.show(message)


def _model(args: argparse.Namespace) -> tuple[Any, str]:
    """The model of ``--model`` (``PREFIX:NAME``; a prefix the ``--tools`` file registered
    too; ``smoke``, the offline stand-in); a built-in provider without its key or a base URL:
    the offline mock."""
    if args.model == SMOKE:
        model, said = smoke_model(args)
        info(said)
        return model, SMOKE
    from ..models._providers import BUILT_IN, DEFAULT, registered, split
    from ._offline import OfflineModel

    prefix, name = split(args.model or "")
    if prefix is not None and registered(prefix):
        model, said = provider_model(args, args.model)
        info(said)
        return model, name
    built = BUILT_IN[prefix or DEFAULT]
    base_url = args.base_url or built.base_url()
    if not (built.key() or base_url):
        keys = " or ".join(built.keys)
        info(f"{built.no_key()}: chatting offline with a mock model that "
             f"echoes you (set {keys}, or pass --base-url URL of a local server)")
        return OfflineModel(), "offline mock"
    if prefix is not None and prefix not in ("openai", "openai-responses"):
        model, said = provider_model(args, args.model, base_url=base_url)
        info(said)
        return model, name
    model, said = openai_model(args, base_url)
    info(said)
    return model, model.model


def _tools(path: str) -> tuple[list[Any], Any]:
    """The tools of the ``--tools`` file, and its ``context`` (a ContextWindow, or None)."""
    from ..tools._base import Tool

    module = load_file(path)
    context = bot_context(module, f"--tools: {path}")
    listed = getattr(module, "tools", None)
    if listed is not None:
        if not isinstance(listed, list | tuple) or not all(isinstance(t, Tool) for t in listed):
            raise UsageProblem(f"--tools: {path}: tools must be a list of tools (@tool "
                               "functions or Tool objects)")
        return list(listed), context
    found = [v for k, v in vars(module).items() if isinstance(v, Tool) and not k.startswith("_")]
    if not found and context is None:
        raise UsageProblem(f"--tools: {path} defines no tools: decorate a function with "
                           "@convo.tool, or list them in tools = [...]")
    return found, context
