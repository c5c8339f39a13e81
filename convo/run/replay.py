"""Replay: answering a run's requests from a saved conversation, in front of a live answerer.

A resumed conversation (``Runner.resume``, ``convo run --resume``, ``convo chat -c``) or a
rebuilt served one runs its template again from the start; ``Replay`` answers each request
from what was saved (the user's messages, the model's replies, tool results, decisions on
approvals, what was said during a handoff to a person) and follows each message the template
yields against the saved ones. The first request the saved conversation does not answer, or
the first message that differs, ends the replay (``CaughtUp`` says how far it got; the rest
of the saved messages are dropped) and from there the live answerer answers. No model, tool
or user is asked again for what was saved; only tools marked ``rerun_on_resume`` (convo's own
pure termination tools such as ``finish``) run again, for their effect on the turn.
A turn's ``ListTools`` is not a step of the conversation: it is handed to the answerer behind,
once per toolset per replay, and the replay goes on (a call of a tool a toolset that is down
would have listed is answered from its saved result, see ``convo.templates.toolsets``).

A ``SubroutineTemplate``'s child (and a ``SubroutineTool``'s call) is replayed the same way
from its saved record (a frame of its own, with the conversation's approvals: a decision made
inside a subroutine is never asked again), whether it ended or the conversation was saved
while inside it. A template's hooks (``RunHooks``) are not run again while replaying, and an
``ExecuteToolTemplate(store_as=…)`` run (``StoreToolRun``) is answered from the saved state:
the saved state already holds what they did.

(Over 300 lines: following what the template yields and answering its requests from the saved
conversation are one object's, a few lines per kind of request; the answering inside the pump
(``ready``) sits beside the answerer's.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..approval import Approval
from ..events import CaughtUp, ReplayStarted, SubroutineEnded, SubroutineStarted
from ..messages import Message
from ..requests import (
    Approve,
    AskUser,
    CallModel,
    ChildMessage,
    HandOff,
    ListTools,
    Request,
    RunHooks,
    RunTools,
    StoreToolRun,
)
from ..session import NO_USAGE, Session, SubroutineRun, Usage
from ..summary import replayed_summaries
from ..tools.calls import ToolRun, rerun, saved_run
from ..tools.handoff import handed_back
from ..tools.toolset import Listed
from .driver import NOTHING

if TYPE_CHECKING:
    from .answerer import Answerer, AsyncAnswerer
    from .driver import Driver

A = TypeVar("A")


class Frame:
    """The saved messages of one session being replayed (the conversation's, or a
    subroutine's), and how far the replay has got in them."""

    __slots__ = ("at", "live", "messages", "runs")

    def __init__(self, messages: Sequence[Message], runs: Sequence[SubroutineRun] = (),
                 *, live: bool = False) -> None:
        self.messages = messages
        self.runs = list(runs)
        self.at = 0
        self.live = live

    @property
    def next(self) -> Message | None:
        return self.messages[self.at] if self.at < len(self.messages) else None


class Replay:
    """An answerer that answers from ``saved`` while it can, then hands over to ``inner``.

    Made by ``Replay.install``, which also has the driver show it every step while it
    replays."""

    __slots__ = ("approvals", "driver", "frames", "inner", "listed", "saved_internal",
                 "saved_state", "started", "state", "tally")

    def __init__(self, inner: Any, saved: Session, driver: Driver) -> None:
        self.inner = inner
        self.driver = driver
        self.state = driver.state
        self.approvals: Mapping[str, Approval] = saved.approvals
        self.saved_state: Mapping[str, Any] = saved.state
        self.saved_internal: dict[str, Any] = saved.internal
        self.frames = [Frame(saved.messages, saved.subroutines)]
        self.started = False
        self.listed: dict[int, tuple[Any, Listed]] = {}  # toolsets listed while replaying
        # What the replayed answers count, added to the run's state once (``settle``): model
        # calls, prompt, completion and total tokens, unreported calls, tool calls, cache
        # reads, cache writes, reasoning tokens.
        self.tally = [0] * 9

    @classmethod
    def install(cls, inner: Any, saved: Session, driver: Driver) -> Replay:
        replay = cls(inner, saved, driver)
        driver.watch = replay.saw
        driver.ready = replay.ready
        driver.state.settle = replay.settle
        counted = replayed_summaries(saved.internal)
        if counted is not None:  # the summary calls the saved conversation made
            driver.state.counted(counted.model_calls, usage=counted.usage)
        return replay

    def quiet(self) -> None:
        """Replay quietly: the run's listeners hear nothing of what the replay rebuilds (no
        ``MessageAdded`` or other event is made for it) but its frame: ``ReplayStarted``,
        each ``SubroutineStarted`` and ``SubroutineEnded`` (what a recorder follows), then
        ``CaughtUp`` when it goes live (or ``RunEnded``), and every event from there on. A
        served rebuild replays so: its recorder records nothing of the replay."""
        self.state.hold()
        self.driver.watched = (SubroutineStarted, SubroutineEnded)  # the rest: unheard

    @property
    def replaying(self) -> bool:
        return self.driver.watch is not None

    # -- following what the template yields ---------------------------------------------------

    def saw(self, step: Any) -> None:
        """Each message and event the template yields, before it is applied (while
        replaying)."""
        # Runs for every saved message (thousands in a long rebuild): the message case first.
        if not self.started:
            self.begin()
        if isinstance(step, Message):
            message = step
        elif isinstance(step, ChildMessage):
            message = step.message
        else:
            if isinstance(step, SubroutineStarted):
                self.frames.append(self._child(self.frames[-1], step.label))
            elif isinstance(step, SubroutineEnded):
                if len(self.frames) > 1:
                    self.frames.pop()
            else:
                return
            if self.state.quiet:  # the listeners follow the subroutines even so
                self.state.told(step)
            return
        frame = self.frames[-1]
        if frame.live:
            return
        at, saved = frame.at, frame.messages
        if at < len(saved):
            was = saved[at]
            # Metadata (usage, timings) may differ between runs without changing the
            # conversation.
            if message is was or (message.role == was.role and message.content == was.content
                                  and message.tool_calls == was.tool_calls
                                  and message.tool_call_id == was.tool_call_id
                                  and message.name == was.name):
                frame.at = at + 1
                return
        frame.live = True  # the template took another path than the saved one
        if len(self.frames) == 1:
            self.go_live()

    def begin(self) -> None:
        """The replay's first step: say so (``ReplayStarted``)."""
        self.started = True
        self.state.told(ReplayStarted(len(self.frames[0].messages)))

    @staticmethod
    def _child(parent: Frame, label: str) -> Frame:
        if parent.live or not parent.runs or parent.runs[0].label != label:
            return Frame((), live=True)
        run = parent.runs.pop(0)
        return Frame(run.messages[run.inherited:])

    def go_live(self) -> None:
        """The replay is over: the live answerer answers from here on."""
        if self.driver.watch is None:
            return
        if not self.started:
            self.begin()
        self.driver.watch = self.driver.ready = None
        self.settle()
        self.state.release()
        root = self.frames[0]
        self.state.emit(CaughtUp(root.at, len(root.messages)))

    # -- answering -------------------------------------------------------------------------

    def ready(self, request: Request[Any]) -> Any:
        """The driver asks first, inside its pump, while the replay replays: what was saved
        (no trip through the answerers per saved request), else ``NOTHING`` and the request
        goes to ``answer``. Listing toolsets is left to ``answer``: it asks the one behind."""
        frame = self.frames[-1]
        if request.__class__ is CallModel and not frame.live:  # the most frequent
            found = self._reply(frame, request)
        elif isinstance(request, ListTools):
            return NOTHING
        else:
            found = self.saved_answer(request)
        if found is NOTHING:
            self.go_live()
        return found

    # Every other request was put to ``ready`` first, in the pump, which went live when the
    # saved conversation could not answer it: here, only a turn's ``ListTools`` may still
    # come while replaying.

    def answer(self, request: Request[A]) -> A:
        if self.driver.watch is not None and isinstance(request, ListTools):
            todo = self._to_list(request)
            return self._listed(  # type: ignore[no-any-return]
                request, todo, self.inner.answer(todo) if todo else [])
        inner: Answerer = self.inner
        return inner.answer(request)

    async def aanswer(self, request: Request[A]) -> A:
        if self.driver.watch is not None and isinstance(request, ListTools):
            todo = self._to_list(request)
            return self._listed(  # type: ignore[no-any-return]
                request, todo, await self.inner.aanswer(todo) if todo else [])
        inner: AsyncAnswerer = self.inner
        return await inner.aanswer(request)

    # Listing a turn's toolsets is not a step of the conversation: the replay goes on, and the
    # one behind it lists them, once per replay (a server that is down costs one attempt, not
    # one per replayed turn; a call of one of its tools is answered from the saved results).

    def _to_list(self, request: ListTools) -> ListTools | None:
        todo = tuple(t for t in request.toolsets if id(t) not in self.listed)
        return ListTools(todo) if todo else None

    def _listed(self, request: ListTools, todo: ListTools | None, listings: list[Listed]
                ) -> Any:
        for toolset, listing in zip(todo.toolsets if todo else (), listings, strict=True):
            self.listed[id(toolset)] = (toolset, listing)
        return [self.listed[id(toolset)][1] for toolset in request.toolsets]

    def saved_answer(self, request: Request[Any]) -> Any:
        """What the saved conversation answers ``request`` with (counted as the live answer
        was), or ``NOTHING``."""
        frame = self.frames[-1]
        if frame.live:
            return NOTHING
        # One case per request type, the most frequent first (this runs for every request).
        if isinstance(request, CallModel):
            return self._reply(frame, request)
        if isinstance(request, AskUser):
            nxt = frame.next
            return nxt.content if nxt is not None and nxt.role == "user" else NOTHING
        if isinstance(request, StoreToolRun):
            return self._stored(request)
        if isinstance(request, RunTools):
            return self._tool_runs(frame, request)
        if isinstance(request, RunHooks):
            return None  # they ran before: the saved state holds what they changed
        if isinstance(request, Approve):
            approvals = self.approvals
            if all(call.id in approvals for call in request.calls):
                return [approvals[call.id] for call in request.calls]
        if isinstance(request, HandOff):
            return self._handed(frame, request)
        return NOTHING

    def _handed(self, frame: Frame, request: HandOff) -> Any:
        """A handoff: the next message said during it, ``None`` where it was handed back
        (``Session.internal`` says after how many), or ``NOTHING`` where it still goes on."""
        ended = handed_back(self.saved_internal, request.call.id)
        if ended is not None and request.said >= ended:
            return None
        nxt = frame.next
        if nxt is not None and nxt.role in ("user", "assistant") and not nxt.tool_calls:
            return nxt
        return NOTHING

    def _reply(self, frame: Frame, request: CallModel) -> Any:
        at = frame.at
        nxt = frame.messages[at] if at < len(frame.messages) else None
        if request.purpose != "reply" or nxt is None or nxt.role != "assistant":
            return NOTHING
        usage = nxt.usage
        tally = self.tally  # counted in ints (per reply), one Usage made at ``settle``
        tally[0] += 1
        if usage is not None:
            tally[1] += usage.prompt_tokens
            tally[2] += usage.completion_tokens
            tally[3] += usage.total_tokens
            tally[4] += usage.unreported
            tally[6] += usage.cache_read_tokens
            tally[7] += usage.cache_write_tokens
            tally[8] += usage.reasoning_tokens
        else:
            tally[4] += 1
        return nxt

    def settle(self) -> None:
        """Add what the replayed answers counted to the run's state (at ``go_live``, or as the
        run ends while replaying): its counts and limits cover the whole conversation."""
        tally = self.tally
        if any(tally):
            usage = Usage(*tally[1:5], cache_read_tokens=tally[6], cache_write_tokens=tally[7],
                          reasoning_tokens=tally[8]) if any(tally[1:5]) else NO_USAGE
            self.state.counted(tally[0], tally[5], usage)
            self.tally = [0] * 9

    def _tool_runs(self, frame: Frame, request: RunTools) -> Any:
        results: dict[str | None, Message] = {}
        messages = frame.messages
        for i in range(frame.at, len(messages)):  # no copy of the rest: this runs per batch
            if messages[i].role != "tool":
                break
            results[messages[i].tool_call_id] = messages[i]
        invocations = request.invocations
        for inv in invocations:
            if inv.call.id not in results:
                return NOTHING
        runs: list[ToolRun] = []
        counted = 0  # the calls the limits count, as the live answer counted them
        for inv in invocations:
            tool = inv.tool
            runs.append(rerun(inv) if tool.rerun_on_resume else
                        saved_run(results[inv.call.id]))
            counted += not tool.free_of_limits
        self.tally[5] += counted
        return runs

    def _stored(self, request: StoreToolRun) -> Any:
        # What the tool stored is in the saved state (the last value stored under its key:
        # a resumed run sees the saved state throughout its replay).
        if request.store_as not in self.saved_state:
            return NOTHING
        self.tally[5] += sum(not inv.tool.free_of_limits for inv in request.invocations)
        return [ToolRun(self.saved_state[request.store_as]) for _ in request.invocations]

