"""Answerers as a stack: the base, the one dispatch on a request's type, and how they are stacked.

An ``Answerer`` has one method per kind of request (``KINDS``), blocking and async
(``call_model``/``acall_model``, ...), and answers any request with ``answer``/``aanswer``: the
one dispatch, a table from request class to the name of its method (no chain of ``isinstance``
per answer; the method is looked up on the answerer, so a subclass's or a patched one is
found). A ``Forwarding`` answerer stands in front of another (``inner``):
each kind goes on to ``inner.answer``/``inner.aanswer`` unless the class overrides that kind, and
a wrapper overrides only the kinds it changes (the replay, a cancel, a served turn).

``stack(live, layers)`` puts layers in front of an answerer, the first outermost, as starlette's
``build_middleware_stack`` does; ``convo._runner.Runner.start`` assembles a run's stack with it.
Nothing assigns another answerer's ``inner``: each gets it in its constructor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .._requests import (
    Approve,
    AskUser,
    CallModel,
    CheckGuards,
    HandOff,
    ListTools,
    Request,
    RunHooks,
    RunTools,
    StoreToolRun,
    TakeSteered,
)

if TYPE_CHECKING:
    from .._approval import Approval
    from .._messages import Message
    from .._parts import Content
    from ..guards._base import Checked
    from ..tools._calls import ToolRun
    from ..tools._toolset import Listed

NOTHING: Final = object()
"""What a replay's ``ready`` gives for a request it does not answer (it goes to the answerers)."""

A = TypeVar("A")

KINDS: Final[dict[type[Request[Any]], str]] = {
    CallModel: "call_model", RunTools: "run_tools", StoreToolRun: "store_tool_run",
    AskUser: "ask_user", Approve: "approve", HandOff: "hand_off", RunHooks: "run_hooks",
    ListTools: "list_tools", CheckGuards: "check_guards",
    TakeSteered: "take_steered"}
"""Each request class, and the name of the method that answers it."""


def named(prefix: str) -> dict[type[Request[Any]], str]:
    """``KINDS`` with each name prefixed (``"a"``: the async methods)."""
    return {request: prefix + name for request, name in KINDS.items()}


ASYNC_KINDS: Final = named("a")


def kind(cls: type) -> type[Request[Any]]:
    """The class in ``KINDS`` that a request of class ``cls`` is answered as (a subclass of a
    request is answered as the request it extends)."""
    for base in cls.__mro__:
        if base in KINDS:
            return base
    raise TypeError(f"no answer for a {cls.__name__}: a request must be one of convo._requests")


class Answerer:
    """Answers the requests a template yields: one method per kind, one dispatch (see above).

    A kind an answerer does not answer says so (``TypeError``); an async kind it does not
    override answers as its blocking twin does; a ``StoreToolRun`` is answered as ``RunTools``
    unless ``store_tool_run`` says otherwise."""

    __slots__ = ()

    def answer(self, request: Request[A]) -> A:
        """Answer ``request``, blocking: the method of its kind."""
        try:
            name = KINDS[request.__class__]
        except KeyError:
            name = KINDS[kind(request.__class__)]
        return getattr(self, name)(request)  # type: ignore[no-any-return]

    async def aanswer(self, request: Request[A]) -> A:
        """Answer ``request`` on the running loop: the async method of its kind."""
        try:
            name = ASYNC_KINDS[request.__class__]
        except KeyError:
            name = ASYNC_KINDS[kind(request.__class__)]
        return await getattr(self, name)(request)  # type: ignore[no-any-return]

    def _refuse(self, request: Request[Any]) -> TypeError:
        return TypeError(f"{type(self).__name__} does not answer {request!r}")

    def call_model(self, request: CallModel) -> Message:
        raise self._refuse(request)

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        raise self._refuse(request)

    def store_tool_run(self, request: StoreToolRun) -> list[ToolRun]:
        return self.run_tools(request)

    def ask_user(self, request: AskUser) -> Content:
        raise self._refuse(request)

    def approve(self, request: Approve) -> list[Approval]:
        raise self._refuse(request)

    def hand_off(self, request: HandOff) -> Message | None:
        raise self._refuse(request)

    def run_hooks(self, request: RunHooks) -> None:
        raise self._refuse(request)

    def list_tools(self, request: ListTools) -> list[Listed]:
        raise self._refuse(request)

    def check_guards(self, request: CheckGuards) -> Checked | None:
        raise self._refuse(request)

    def take_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return ()  # nothing steered unless an answerer keeps them (``LiveAnswerer``, served)

    async def acall_model(self, request: CallModel) -> Message:
        return self.call_model(request)

    async def atake_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return self.take_steered(request)

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        return self.run_tools(request)

    async def astore_tool_run(self, request: StoreToolRun) -> list[ToolRun]:
        return await self.arun_tools(request)

    async def aask_user(self, request: AskUser) -> Content:
        return self.ask_user(request)

    async def aapprove(self, request: Approve) -> list[Approval]:
        return self.approve(request)

    async def ahand_off(self, request: HandOff) -> Message | None:
        return self.hand_off(request)

    async def arun_hooks(self, request: RunHooks) -> None:
        return self.run_hooks(request)

    async def alist_tools(self, request: ListTools) -> list[Listed]:
        return self.list_tools(request)

    async def acheck_guards(self, request: CheckGuards) -> Checked | None:
        return self.check_guards(request)


class Forwarding(Answerer):
    """An answerer in front of ``inner`` (any answerer: ``answer`` and ``aanswer``): every kind
    it does not override goes on to ``inner``."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def call_model(self, request: CallModel) -> Message:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def ask_user(self, request: AskUser) -> Content:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def approve(self, request: Approve) -> list[Approval]:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def hand_off(self, request: HandOff) -> Message | None:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def run_hooks(self, request: RunHooks) -> None:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def list_tools(self, request: ListTools) -> list[Listed]:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def check_guards(self, request: CheckGuards) -> Checked | None:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    def take_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return self.inner.answer(request)  # type: ignore[no-any-return]

    async def acall_model(self, request: CallModel) -> Message:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def atake_steered(self, request: TakeSteered) -> tuple[Message, ...]:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def aask_user(self, request: AskUser) -> Content:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def aapprove(self, request: Approve) -> list[Approval]:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def ahand_off(self, request: HandOff) -> Message | None:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def arun_hooks(self, request: RunHooks) -> None:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def alist_tools(self, request: ListTools) -> list[Listed]:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def acheck_guards(self, request: CheckGuards) -> Checked | None:
        return await self.inner.aanswer(request)  # type: ignore[no-any-return]


Layer = Callable[[Any], Any]
"""Makes an answerer in front of the one it is given (a ``Forwarding`` class, or a partial of
one with its other arguments)."""


def stack(live: Any, layers: Sequence[Layer | None] = ()) -> Any:
    """``live`` with ``layers`` in front of it, the first outermost (``None``: no layer)."""
    answerer = live
    for layer in reversed(layers):
        if layer is not None:
            answerer = layer(answerer)
    return answerer
