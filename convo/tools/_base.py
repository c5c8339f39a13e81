"""Tool, ToolArgument, ToolResult, TerminateResponse: what a model may call, and what a call
gives back (a result; or a response that ends the turn, read by ``convo.tools._calls.outcome``
into the ending it asks for, a value of ``convo.tools._endings``)."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

import attrs

from .._errors import ToolArgumentError, ToolDefinitionError
from .._messages import ToolCall
from .._parts import PART_TYPES, Part, normalize
from .._session import RunStatus
from ._context import ToolContext
from ._schema import describe
from ._validation import ABSENT, Arguments, Spec

NeedsApproval: TypeAlias = "bool | Callable[[dict[str, Any]], bool]"
APPROVERS: Final = ("user", "operator")
"""Who may approve a tool's calls: the user of the conversation, or an operator (staff)."""


def checked_approver(tool: str, approver: Any) -> str:
    """``approver`` if it is one of ``APPROVERS``; else a ``ValueError`` naming the tool."""
    if approver not in APPROVERS:
        raise ValueError(f"tool {tool!r}: approver must be 'user' or 'operator', "
                         f"got {approver!r}")
    return str(approver)

TERMINAL_NOTE: Final = (
    "Calling this tool ends your turn: its output is your response. "
    "Do not add text after calling it."
)


@attrs.frozen(slots=True)
class ToolArgument:
    """One argument a tool takes: its name, what it is for, its Python type."""

    name: str
    description: str
    value_type: Any
    required: bool = True


@attrs.frozen(slots=True)
class ToolResult:
    """A tool's result. ``content`` that is a string is sent as is; anything else as JSON."""

    content: Any
    metadata: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        return to_text(self.content)


@attrs.frozen(slots=True)
class TerminateResponse:
    """Returned by any tool: the turn ends (``done=True``) once this batch is answered.

    ``message`` becomes the call's tool message (``"Finished"`` when None). The keyword
    fields let finish tools report a status, a summary and a finish status on the turn.
    """

    message: str | None = None
    status: RunStatus = attrs.field(default=RunStatus.COMPLETED, kw_only=True,
                                    converter=RunStatus)
    note: str | None = attrs.field(default=None, kw_only=True)
    summary: str | None = attrs.field(default=None, kw_only=True)
    finish_status: str | None = attrs.field(default=None, kw_only=True)

    @property
    def text(self) -> str:
        return "Finished" if self.message is None else self.message

    def saved(self) -> dict[str, Any]:
        """What a tool message keeps of it (metadata ``TERMINATED``), so that a resumed run
        ends the turn the same way without running the tool again."""
        fields = {"note": self.note, "summary": self.summary,
                  "finish_status": self.finish_status}
        return {"status": self.status.value} | {k: v for k, v in fields.items() if v is not None}

    @classmethod
    def from_saved(cls, text: str, saved: Mapping[str, Any]) -> TerminateResponse:
        """The response a saved tool message (its text and ``saved()``) stood for."""
        return cls(text, status=saved["status"], note=saved.get("note"),
                   summary=saved.get("summary"), finish_status=saved.get("finish_status"))


def to_content(value: Any) -> str | tuple[Part, ...]:
    """What the model gets of a tool's return value: its text (``to_text``), or parts when it
    returned an ``Image``, ``Audio``, ``Document`` or a list holding some (other items of
    the list become text)."""
    if isinstance(value, ToolResult):
        value = value.content
    if isinstance(value, PART_TYPES):
        return normalize(value)
    if isinstance(value, list | tuple) and any(isinstance(v, PART_TYPES) for v in value):
        return normalize([v if isinstance(v, PART_TYPES) else to_text(v) for v in value])
    return to_text(value)


def to_text(value: Any) -> str:
    """What the model sees of a tool's return value: strings as is, the rest JSON once."""
    if isinstance(value, str):
        return value
    if isinstance(value, ToolResult):
        return value.text
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"the tool returned a {type(value).__name__}, which cannot be sent to the model "
            f"as JSON ({exc}); return a str, a ToolResult or JSON values"
        ) from exc


class SavedToolError(Exception):
    """A failed call answered from a saved transcript: its tool message, verbatim."""


def _jsonable(value: Any) -> Any:
    """pydantic models, dataclasses, dates, sets...: what pydantic dumps them as."""
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise TypeError(str(exc)) from None


class Tool:
    """A tool a model may call.

    Subclass it with class attributes ``name``, ``description``, ``arguments`` (a dict of
    ``ToolArgument``), optionally ``terminal = True``, and implement ``_execute(args)``
    (``async def`` works too; with ``takes_context = True`` it is
    ``_execute(args, context)``). ``execute(**kwargs)`` validates, then calls ``_execute``.
    """

    name: str = ""
    description: str = ""
    arguments: Mapping[str, ToolArgument] = {}
    terminal: bool = False
    #: Seconds a call may run before it becomes an error result (a sync tool runs in a worker
    #: thread that is abandoned on timeout; see convo.tools._calls).
    timeout: float | None = None
    #: Run a synchronous tool on the event loop under ``arun()`` and serving, instead of in a
    #: worker thread: only for trivial tools that never block.
    inline: bool = False
    #: An async tool whose ``invoke`` blocks until its result without an event loop of its own
    #: (an ``MCPTool``: its server's loop does the work); a blocking run calls ``invoke``
    #: instead of running ``ainvoke`` in a fresh ``asyncio.run``.
    runs_blocking: bool = False
    #: Consecutive failed calls allowed before the turn ends (None: bounded by the turn only).
    retries: int | None = None
    #: Send the schema in OpenAI's strict form (``"strict": true``; see docs/tools.md).
    strict: bool = False
    #: Whether ``_execute`` takes a ``ToolContext`` after the arguments.
    takes_context: bool = False
    #: Other names the model may call it by (not advertised).
    aliases: tuple[str, ...] = ()
    #: For finish tools: the ToolingTemplate mode whose turns this tool finishes.
    finish_mode: str | None = None
    #: Run it again when a saved conversation is resumed, instead of reusing its saved result
    #: (only for pure tools whose return value matters more than its text: convo's finish
    #: tools). By default such a tool is also ``free_of_limits`` and ``shows_effect_only``.
    rerun_on_resume: bool = False
    #: Ask a person before each call runs: ``True``, or a function of the validated arguments
    #: (``lambda args: args["amount"] > 100``). See docs/approval.md.
    needs_approval: NeedsApproval = False
    #: Who decides its approvals: ``"user"`` (the person in the conversation) or
    #: ``"operator"`` (staff: a served user cannot decide them). See docs/approval.md.
    approver: str = "user"

    def __init__(self, *, needs_approval: NeedsApproval | None = None,
                 approver: str | None = None) -> None:
        if needs_approval is not None:
            self.needs_approval = needs_approval
        if approver is not None:
            self.approver = checked_approver(self.name or type(self).__name__, approver)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "approver" in cls.__dict__:  # a class attribute: checked where it is written
            checked_approver(cls.__dict__.get("name") or cls.__name__, cls.__dict__["approver"])

    def _execute(self, args: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _execute(args)")

    # -- what the runner asks ---------------------------------------------------------------

    @property
    def free_of_limits(self) -> bool:
        """Whether ``Limits.tool_calls`` neither counts nor blocks its calls (a budget must
        not keep a conversation from ending cleanly): convo's termination tools, which are
        marked ``rerun_on_resume``."""
        return self.rerun_on_resume

    @property
    def shows_effect_only(self) -> bool:
        """Whether front ends show what it did rather than its call: a terminal tool, and
        convo's own turn-ending tools (marked ``rerun_on_resume``)."""
        return self.terminal or self.rerun_on_resume

    # -- what the runner calls --------------------------------------------------------------

    def requires_approval(self, args: dict[str, Any]) -> bool:
        """Whether this call, with these arguments, must be approved before it runs."""
        rule = self.needs_approval
        return bool(rule(args)) if callable(rule) else bool(rule)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self._execute)

    def invoke(self, args: dict[str, Any], context: ToolContext | None = None) -> Any:
        """Run with already validated arguments (``convo.tools._calls`` applies ``timeout``).
        ``ainvoke`` and ``execute`` call this one, ``Tool.invoke``, even where a subclass
        runs a blocking call its own way (``MCPTool.invoke``)."""
        if self.takes_context:
            return self._execute(args, context)  # type: ignore[call-arg]
        return self._execute(args)

    async def ainvoke(self, args: dict[str, Any], context: ToolContext | None = None) -> Any:
        result = Tool.invoke(self, args, context)
        if inspect.isawaitable(result):
            return await result
        return result

    def execute(self, context: ToolContext | None = None, /, **kwargs: Any) -> Any:
        """Validate ``kwargs``, then run (an async tool returns an awaitable).

        A tool that takes a ``ToolContext`` gets ``context`` (None when not given).
        """
        return Tool.invoke(self, self.validate(kwargs), context)

    # -- schema and validation ---------------------------------------------------------------

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema (built once per tool)."""
        cached: dict[str, Any] | None = self.__dict__.get("_schema")
        if cached is None:
            cached = self.__dict__["_schema"] = self._build_schema()
        return cached

    def _specs(self) -> list[Spec]:
        specs = []
        for key, arg in self.arguments.items():
            if not isinstance(arg, ToolArgument):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: arguments[{key!r}] must be a ToolArgument, "
                    f"got {type(arg).__name__}"
                )
            specs.append(Spec(key, arg.value_type, ... if arg.required else ABSENT,
                              arg.description))
        return specs

    @functools.cached_property
    def compiled(self) -> Arguments:
        """The arguments compiled into a pydantic model: once per tool, on first use (a
        ``FunctionTool`` has it from its construction), then read as an attribute."""
        if not self.name or not isinstance(self.name, str):
            raise ToolDefinitionError(f"tool {type(self).__name__} has no name: set the "
                                      "class attribute `name`")
        return Arguments(self.name, self._specs(), strict=self.strict, keep_defaults=False,
                         signature=self.signature_text)

    def _build_schema(self) -> dict[str, Any]:
        parameters = self.compiled.parameters
        description = self.description or ""
        if self.terminal:
            description = f"{description.rstrip()} {TERMINAL_NOTE}".strip()
        function: dict[str, Any] = {"name": self.name, "description": description,
                                    "parameters": parameters}
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def signature_text(self) -> str:
        """``a (integer), b (string, optional)`` — for messages to the model."""
        parts = [
            f"{k} ({describe(a.value_type)}{'' if a.required else ', optional'})"
            for k, a in self.arguments.items()
        ]
        return ", ".join(parts) or "no arguments"

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Check and coerce arguments; ``ToolArgumentError`` saying what is wrong."""
        return self.compiled.validate(args)

    def parse_raw(self, raw: str) -> dict[str, Any]:
        """Arguments from text that was not a JSON object (override to accept bare strings)."""
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ToolArgumentError(
                f"the arguments for {self.name!r} are not valid JSON ({exc.args[0]}): got "
                f"{raw[:200]!r}; send a JSON object with {self.signature_text()}"
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentError(
                f"the arguments for {self.name!r} must be a JSON object, got {raw[:200]!r}; "
                f"send an object with {self.signature_text()}"
            )
        return value

    def arguments_of(self, call: ToolCall) -> dict[str, Any]:
        """The validated arguments of a model's call."""
        args = call.arguments if call.raw_arguments is None else self.parse_raw(call.raw_arguments)
        return self.validate(args)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


@attrs.frozen(slots=True)
class Bound:
    """A tool with its context: what the runner invokes for a tool that takes one."""

    tool: Tool
    context: ToolContext

    @property
    def is_async(self) -> bool:
        return self.tool.is_async

    @property
    def timeout(self) -> float | None:
        return self.tool.timeout

    @property
    def inline(self) -> bool:
        return self.tool.inline

    @property
    def runs_blocking(self) -> bool:
        return self.tool.runs_blocking

    @property
    def rerun_on_resume(self) -> bool:
        return self.tool.rerun_on_resume

    @property
    def free_of_limits(self) -> bool:
        return self.tool.free_of_limits

    def requires_approval(self, args: dict[str, Any]) -> bool:
        return self.tool.requires_approval(args)

    @property
    def approver(self) -> str:
        return self.tool.approver

    def invoke(self, args: dict[str, Any]) -> Any:
        return self.tool.invoke(args, self.context)

    async def ainvoke(self, args: dict[str, Any]) -> Any:
        return await self.tool.ainvoke(args, self.context)
