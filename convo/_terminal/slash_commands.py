"""Slash commands typed at the chat prompt: ``/help``, ``/exit``, ``/save``, ``/retry``...

A line that starts with ``/word`` is a command and never reaches the model; an unknown one is
refused with the list, and the command it most looks like (``/hlep``: did you mean
``/help``?). Start a line with ``//`` to send one that begins with ``/``.

(Over 300 lines: one short handler per command, and their table, in one place.)
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from .._messages import Message
from .._parts import (
    DEFAULT_MAX_BYTES,
    Audio,
    Content,
    Document,
    Image,
    Part,
    PartError,
    Text,
    describe,
    from_path,
    normalize,
)
from .._session import Session, Usage

#: name → (arguments, what it does); the order is the order of /help.
COMMANDS: Final = {
    "help": ("", "show the commands and keys"),
    "exit": ("", "leave the chat (also /quit, Ctrl-D)"),
    "save": ("[PATH]", "write the conversation so far to a transcript file"),
    "retry": ("", "regenerate the last reply (a branch: the original stays in the history)"),
    "edit": ("[TEXT]", "edit your last message and send it again (a branch)"),
    "branch": ("N", "go on from before message N (numbered by /history)"),
    "history": ("", "the messages so far, numbered for /branch"),
    "undo": ("", "drop the last exchange (your message and the reply)"),
    "clear": ("", "start afresh: drop every message but the system prompt"),
    "model": ("[NAME]", "show the model, or switch to another one"),
    "usage": ("", "tokens (and the cost, for known models) so far"),
    "tools": ("", "the tools the model may call (and their MCP servers)"),
    "attach": ("[PATH]", "attach a file to your next message (no PATH: list them)"),
    "detach": ("", "drop the attachments not sent yet"),
}
ALIASES: Final = {"quit": "exit"}
KEYS: Final = (
    ("Enter", "send"),
    ("Alt+Enter, Esc Enter", "a new line (pasted lines stay one message)"),
    ('"""', 'on a line of its own: a multi-line message up to the next """'),
    ("Tab", "complete a /command"),
    ("Up, Down, Ctrl-R", "earlier messages (kept between sessions)"),
    ("Ctrl-C", "cancel the reply; at an empty prompt, twice to leave"),
    ("Ctrl-D", "leave the chat"),
)
#: US dollars per million tokens (input, output), list prices of 2025; /usage estimates.
PRICES: Final = {
    "gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60), "gpt-4.1-nano": (0.10, 0.40),
}
_COMMAND: Final = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.S)


def parse(text: str) -> tuple[str, str] | None:
    """``("name", "argument")`` when ``text`` is a slash command, else None."""
    match = _COMMAND.fullmatch(text.strip())
    if match is None:
        return None
    return match[1].lower(), (match[2] or "").strip()


def help_text() -> str:
    lines = ["commands:"]
    lines += [f"  /{name} {args}".ljust(18) + what for name, (args, what) in COMMANDS.items()]
    lines.append("keys:")
    lines += [f"  {key}".ljust(24) + what for key, what in KEYS]
    return "\n".join(lines)


class Branching(EOFError):
    """A command made a branch (``Runner.branch``): the run stops here (as ``/exit`` stops
    it: the conversation stays in the history) and ``branch`` goes on as a new conversation,
    sending ``text`` first when it is not ``None``."""

    def __init__(self, branch: Session, text: str | None) -> None:
        super().__init__("a branch")
        self.branch = branch
        self.text = text


class Commands:
    """Carries out slash commands on the session being asked about.

    ``say`` shows a line to the user; ``model`` is the runner's model (for ``/model``);
    ``changed`` is called after messages were dropped (the history follows); ``source`` is
    what a ``/save``'s transcript names as its source (``"convo chat"``, a bot file).
    ``attached``: the files ``/attach`` (or ``convo chat -a``) read, sent with the next
    message; none over ``max_attachment_bytes``.
    """

    def __init__(self, say: Callable[[str], None] | None = None, *,
                 source: str | None = None, changed: Callable[[], None] | None = None,
                 max_attachment_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.say: Callable[[str], None] = say or (lambda text: print(text, flush=True))
        self.attached: list[Image | Audio | Document] = []
        self.max_attachment_bytes = max_attachment_bytes
        self.model: Any = None
        self.tools: tuple[Any, ...] = ()
        self.changed = changed
        self.source = source
        # id(reply) -> (the reply, the name of the model that made it), for /usage's prices.
        # The reply is kept so that its id is never reused by another message.
        self._made_by: dict[int, tuple[Message, str | None]] = {}
        #: Reads a line with ``text`` already typed (the line editor's), for ``/edit``.
        self.prefilled: Callable[[str, str], str] | None = None
        #: Makes a branch of a session before an index (the runner's ``branch``).
        self.brancher: Callable[[Session, int], Session] | None = None
        self.branching: Branching | None = None  # the branch made, until it goes on
        self.sending: str | None = None  # what the next prompt sends without asking
        self.branched: Session | None = None  # the session a branch runs on
        self.given = 0  # the first messages of a session that its template did not yield

    def handle(self, text: str, session: Session) -> Content | None:
        """Carry out the command in ``text``. Returns what to send to the model (the text with
        the attached files, ``/retry``'s message), or None when the command is done;
        ``/exit`` raises ``EOFError``."""
        self._attribute(session)
        if text.lstrip().startswith("//"):
            return self.with_attached(text.lstrip()[1:])
        parsed = parse(text)
        if parsed is None:
            return self.with_attached(text)
        name, arg = parsed
        name = ALIASES.get(name, name)
        if name not in COMMANDS:
            self.say(_unknown(name))
            return None
        if name == "exit":
            raise EOFError("/exit")
        handler: Callable[[str, Session], Content | None] = getattr(self, f"_{name}")
        return handler(arg, session)

    def attach(self, path: str) -> bool:
        """Read the file at ``path`` to send with the next message; say why not if it can't."""
        try:
            part = from_path(Path(path).expanduser(), max_bytes=self.max_attachment_bytes)
        except PartError as exc:
            self.say(f"not attached: {exc} (--max-attachment-bytes)")
            return False
        except OSError as exc:
            self.say(f"not attached: cannot read {path}: {exc.strerror or exc}")
            return False
        self.attached.append(part)
        return True

    def pending(self) -> str | None:
        """The line shown above the prompt while files wait for the next message."""
        if not self.attached:
            return None
        return "attached: " + " ".join(describe(p) for p in self.attached)

    def with_attached(self, text: str) -> Content:
        """The message to send: ``text``, with the attached files (which are then sent)."""
        if not self.attached:
            return text
        parts: list[Part] = [Text(text), *self.attached] if text else [*self.attached]
        self.attached = []
        return normalize(parts)

    def _attach(self, arg: str, session: Session) -> None:
        if not arg:
            self.say(self.pending() or "nothing attached (/attach PATH attaches a file to "
                                       "your next message)")
            return
        if self.attach(arg):
            part = self.attached[-1]
            self.say(f"{describe(part)} goes with your next message (/detach drops it)")

    def _detach(self, arg: str, session: Session) -> None:
        dropped, self.attached = len(self.attached), []
        self.say(f"dropped {_count(range(dropped), 'attachment')}" if dropped
                 else "nothing attached")

    def _model_name(self) -> str | None:
        name = getattr(self.model, "model", None)
        return name if isinstance(name, str) else None

    def _attribute(self, session: Session) -> None:
        """Note which model made the replies added since the last prompt: the model as it is
        now, since only ``/model`` changes it, and only here at the prompt. (Replies of a
        continued chat, made before this session, are taken to be the current model's.)"""
        name = self._model_name()
        for message in session.messages:
            if message.role == "assistant" and id(message) not in self._made_by:
                self._made_by[id(message)] = (message, name)

    def _help(self, arg: str, session: Session) -> None:
        self.say(help_text())

    def _save(self, arg: str, session: Session) -> None:
        from .._record.transcript import TranscriptWriter
        from ..events import MessageAdded

        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = Path(arg or f"convo-{stamp}.jsonl").expanduser()
        try:
            writer = TranscriptWriter.create(path, Session(state=session.state,
                                                           internal=session.internal),
                                             source=self.source)
        except FileExistsError:
            self.say(f"not saved: {path} already exists (give another PATH)")
            return
        except OSError as exc:
            self.say(f"not saved: cannot write {path}: {exc.strerror}")
            return
        try:
            for index, message in enumerate(session.messages):
                writer(MessageAdded(message, index))
            writer.saved()  # the conversation goes on: not a run that was killed
        finally:
            writer.close()
        self.say(f"saved {_count(session.messages)} to {path} (convo replay {path} shows it)")

    def _retry(self, arg: str, session: Session) -> Content | None:
        if self.brancher is None:  # no branches here (a CommandLineRunner of one's own)
            at = _last_user(session)
            if at is None:
                self.say("nothing to retry yet")
                return None
            content = session.messages[at].content  # with its attachments
            self._drop(session, at)
            self.say("asking again")
            return content
        at = _last_reply(session)
        if at is None:
            self.say("nothing to retry yet")
            return None
        return self._branch_at(session, at, None)

    def _edit(self, arg: str, session: Session) -> Content | None:
        at = _last_user(session)
        if at is None:
            self.say("nothing to edit yet")
            return None
        text = arg
        if not text:
            said = session.messages[at].content
            if not isinstance(said, str) or self.prefilled is None:
                self.say("type /edit TEXT to send TEXT in its place")
                return None
            try:
                text = self.prefilled("Edit: ", said)
            except (KeyboardInterrupt, EOFError):
                text = ""
            if not text.strip():
                self.say("(edit given up)")
                return None
        return self._branch_at(session, at, text)

    def _branch(self, arg: str, session: Session) -> Content | None:
        try:
            before = int(arg)
        except ValueError:
            self.say(f"/branch N: N is a message's number (see /history), got {arg!r}")
            return None
        return self._branch_at(session, before, None)

    def _branch_at(self, session: Session, before: int, text: str | None) -> Content | None:
        if self.brancher is None:
            self.say("branches are not available here")
            return None
        try:  # made now, nothing called: a bad point is said and the conversation goes on
            branch = self.brancher(session, before)
        except ValueError as exc:
            self.say(str(exc))
            return None
        self.branching = Branching(branch, text)
        raise self.branching

    def _history(self, arg: str, session: Session) -> None:
        if not session.messages:
            self.say("no messages yet")
            return
        for index, message in enumerate(session.messages):
            who = {"user": "you", "assistant": "assistant"}.get(message.role, message.role)
            if message.role == "tool":
                who = f"tool {message.name}"
            text = message.content if isinstance(message.content, str) else \
                " ".join(describe(part) for part in message.content)
            calls = ", ".join(f"{c.name}()" for c in message.tool_calls)
            line = " ".join(text.split())[:70] or (f"[calls {calls}]" if calls else "")
            self.say(f"{index:>4}  {who}: {line}")

    def _undo(self, arg: str, session: Session) -> None:
        at = _last_user(session)
        if at is None:
            self.say("nothing to undo")
            return
        dropped = len(session.messages) - at
        self._drop(session, at)
        self.say(f"dropped the last exchange ({_count(range(dropped))})")

    def _clear(self, arg: str, session: Session) -> None:
        keep = 0
        while keep < len(session.messages) and session.messages[keep].role == "system":
            keep += 1
        dropped = len(session.messages) - keep
        self._drop(session, keep)
        self.say(f"cleared {_count(range(dropped))}: the model starts afresh"
                 + (" (the system prompt stays)" if keep else ""))

    def _drop(self, session: Session, at: int) -> None:
        del session.messages[at:]
        if self.changed is not None:
            self.changed()

    def _model(self, arg: str, session: Session) -> None:
        name = getattr(self.model, "model", None)
        if not arg:
            self.say(f"model: {name or type(self.model).__name__} (/model NAME switches)")
        elif isinstance(name, str):
            self.model.model = arg
            self.say(f"model: {arg} from now on")
        else:
            self.say(f"this chat runs on {type(self.model).__name__}, which has no model "
                     "names to switch between")

    def _tools(self, arg: str, session: Session) -> None:
        self.say(tools_text(self.tools))

    def _usage(self, arg: str, session: Session) -> None:
        total, replies = Usage(), 0
        by_model: dict[str | None, tuple[Usage, int]] = {}
        for message in session.messages:
            reply = message.usage if message.role == "assistant" else None
            if reply is not None:
                total, replies = total + reply, replies + 1
                made_by = self._made_by.get(id(message), (message, self._model_name()))[1]
                tokens, count = by_model.get(made_by, (Usage(), 0))
                by_model[made_by] = (tokens + reply, count + 1)
        if not replies:
            self.say("no token usage reported so far")
            return
        self.say(f"{total.prompt_tokens} tokens in, {total.completion_tokens} out, "
                 f"{total.total_tokens} in all, over {_count(range(replies), 'reply')}"
                 + _cost(by_model))


def _cost(by_model: dict[str | None, tuple[Usage, int]]) -> str:
    """The list price of the replies, each at the price of the model that made it."""
    priced = {name: v for name, v in by_model.items() if name is not None and name in PRICES}
    if not priced:
        return ""
    cost = sum(tokens.prompt_tokens * PRICES[name][0] + tokens.completion_tokens * PRICES[name][1]
               for name, (tokens, _) in priced.items()) / 1e6
    money = f"about ${cost:.2f}" if cost >= 0.01 else "under a cent"
    if len(by_model) == 1:
        return f"; {money} at {next(iter(priced))}'s list price"
    parts = ", ".join(f"{_count(range(n), 'reply')} of {name}" for name, (_, n) in priced.items())
    text = f"; {money} at list prices ({parts})"
    unpriced = sum(n for name, (_, n) in by_model.items() if name not in priced)
    if unpriced:
        text += f"; {_count(range(unpriced), 'reply')} of models without a known price not counted"
    return text


def _unknown(name: str) -> str:
    """What an unknown command gets: the one it most looks like (a typo), and the list."""
    import difflib

    known = ", ".join(f"/{n}" for n in COMMANDS)
    close = difflib.get_close_matches(name, [*COMMANDS, *ALIASES], n=1)
    guess = f" (did you mean /{close[0]}?)" if close else ""
    return (f"unknown command /{name}{guess}: the commands are {known} (start the line with "
            "// to send it as it is)")


def tools_text(tools: Any) -> str:
    """``/tools``: one line per tool, its name, where it comes from, what it does."""
    from ..tools._toolset import is_toolset, list_toolset

    listed: list[Any] = []
    missing: list[str] = []
    for item in tools:  # a toolset (an MCP server in the bot's tool list): its tools now
        got = list_toolset(item) if is_toolset(item) else None
        listed.extend([item] if got is None else got.tools)
        missing.extend([] if got is None or got.error is None else [f"  ({got.error})"])
    if not listed and not missing:
        return "no tools: the model can only talk (convo chat --tools FILE or --mcp FILE)"
    lines = [f"{len(listed)} tools:"]
    for t in listed:
        server = getattr(t, "server", None)
        where = f" (MCP server {server.name!r})" if server is not None else ""
        what = (t.description or "").strip().splitlines()
        lines.append(f"  {t.name}{where}" + (f": {what[0]}" if what else ""))
    return "\n".join(lines + missing)


def _last_user(session: Session) -> int | None:
    for index in range(len(session.messages) - 1, -1, -1):
        if session.messages[index].role == "user":
            return index
    return None


def _last_reply(session: Session) -> int | None:
    """The last assistant message a person did not write (the reply /retry makes again)."""
    for index in range(len(session.messages) - 1, -1, -1):
        message = session.messages[index]
        if message.role == "assistant" and message.metadata.get("author") is None:
            return index
    return None


def _count(items: Any, noun: str = "message") -> str:
    n = len(items)
    plural = "replies" if noun == "reply" else f"{noun}s"
    return f"{n} {noun if n == 1 else plural}"

