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
would have listed is answered from its saved result, see ``convo.templates._toolsets``).

A ``SubroutineTemplate``'s child (and a ``SubroutineTool``'s call) is replayed the same way
from its saved record (a frame of its own, with the conversation's approvals: a decision made
inside a subroutine is never asked again), whether it ended or the conversation was saved
while inside it; a subroutine inside it, from the record the child's record holds, at any
depth. A template's hooks (``RunHooks``) are not run again while replaying, and an
``ExecuteToolTemplate(store_as=…)`` run (``StoreToolRun``) is answered from the saved state:
the saved state already holds what they did.

``Replay`` is an answerer in front of the run's others (``convo._run.stack.Forwarding``) and is
given to the ``Driver``'s constructor: the driver shows it each step while it replays
(``saw``), asks it first for each request inside the pump (``ready``: the saved answer of the
request's kind, ``saved_<kind>``, through the one table of kinds), and stops showing it
anything once it says it went live.

(Over 300 lines: following what the template yields and answering its requests from the saved
conversation are one object's, a few lines per kind of request; the answering inside the pump
(``ready``) sits beside the answerer's.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from .._approval import Approval
from .._internal import STATE_UNDO, rewound
from .._messages import Message
from .._requests import (
    Approve,
    AskUser,
    CallModel,
    CheckGuards,
    ChildMessage,
    HandOff,
    ListTools,
    Request,
    RunHooks,
    RunTools,
    StoreToolRun,
    TakeSteered,
)
from .._session import NO_USAGE, Session, SubroutineRun, Usage
from .._summary import replayed_summaries
from ..events import CaughtUp, Event, ReplayStarted, SubroutineEnded, SubroutineStarted
from ..tools._calls import ToolRun, rerun, saved_run
from ..tools._handoff import handed_back
from ..tools._toolset import Listed
from .recorded import recorded_call, recorded_input
from .stack import NOTHING, Forwarding, kind, named
from .state import RunState

SAVED: Final = named("saved_")  # what ``ready`` answers each kind of request with


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


class Replay(Forwarding):
    """An answerer that answers from ``saved`` while it can, then hands over to ``inner``; the
    ``Driver`` it is given to shows it every step while it replays."""

    __slots__ = ("answers", "approvals", "frames", "ids", "kept", "listed", "replaying",
                 "saved_internal", "saved_state", "started", "state", "tally", "watched")

    def __init__(self, inner: Any, saved: Session, state: RunState) -> None:
        super().__init__(inner)
        self.state = state
        self.approvals: Mapping[str, Approval] = saved.approvals
        self.saved_state: Mapping[str, Any] = saved.state
        self.saved_internal: dict[str, Any] = saved.internal
        self.frames = [Frame(saved.messages, saved.subroutines)]
        self.started = False
        self.replaying = True  # until ``go_live``
        # The saved message to add in place of the one just followed (``saw``): the same,
        # with the record of the state's changes the template's own does not carry.
        self.kept: Message | None = None
        self.ids = False  # whether a template's own message equal to the saved one is the saved
        self.watched: tuple[type[Event], ...] = (Event,)  # the events ``saw`` is shown
        self.listed: dict[int, tuple[Any, Listed]] = {}  # toolsets listed while replaying
        # What the replayed answers count, added to the run's state once (``settle``): model
        # calls, prompt, completion and total tokens, unreported calls, tool calls, cache
        # reads, cache writes, reasoning tokens.
        self.tally = [0] * 9
        # ``ready``'s table, its methods looked up once (a subclass's found): each request
        # class, and this replay's saved answer of its kind (the pump calls it directly).
        self.answers: dict[type[Request[Any]], Callable[[Any], Any]] = {
            request: getattr(self, name) for request, name in SAVED.items()}
        counted = replayed_summaries(saved.internal)
        if counted is not None:  # the summary calls the saved conversation made
            state.counted(counted.model_calls, usage=counted.usage)

    def quiet(self) -> None:
        """Replay quietly: the run's listeners hear nothing of what the replay rebuilds (no
        ``MessageAdded`` or other event is made for it) but its frame: ``ReplayStarted``,
        each ``SubroutineStarted`` and ``SubroutineEnded`` (what a recorder follows), then
        ``CaughtUp`` when it goes live (or ``RunEnded``), and every event from there on. A
        served rebuild replays so: its recorder records nothing of the replay."""
        self.state.hold()
        self.watched = (SubroutineStarted, SubroutineEnded)  # the rest: unheard

    def keep_ids(self) -> None:
        """Where the template makes a message of its own again (a system prompt, the user's
        words it was answered with) equal to the saved one but for its ``id``, take the saved
        one, ``id`` and all (a served rebuild: its messages keep the ids they were stored
        under; an equal value, taken without a copy of each)."""
        self.ids = True

    # -- following what the template yields ---------------------------------------------------

    def saw(self, step: Any) -> bool:
        """Each message and event the template yields, before it is applied (while
        replaying); ``False`` once the replay went live."""
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
                return True
            if self.state.quiet:  # the listeners follow the subroutines even so
                self.state.told(step)
            return True
        frame = self.frames[-1]
        if frame.live:
            return True
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
                if message is not was and len(self.frames) == 1:
                    metadata = was.metadata
                    undo = metadata.get(STATE_UNDO) if metadata else None
                    if self.ids and message.id != was.id and message.__class__ is was.__class__ \
                            and (message.metadata if undo is None else
                                 {**message.metadata, STATE_UNDO: undo}) == metadata:
                        self.kept = was  # equal to it (``keep_ids``), and stored under its id
                    elif undo is not None:
                        self.kept = attrs.evolve(message, metadata={**message.metadata,
                                                                    STATE_UNDO: undo})
                return True
        if self.adopts(frame, message):
            return True
        frame.live = True  # the template took another path than the saved one
        if len(self.frames) == 1:
            self.go_live()
        return self.replaying

    def adopts(self, frame: Frame, message: Message) -> bool:
        """Whether the replay takes ``message``, which the saved conversation does not hold
        next, as its own and goes on (``HistoryReplay``); a saved conversation does not."""
        return False

    def begin(self) -> None:
        """The replay's first step: say so (``ReplayStarted``)."""
        self.started = True
        self.state.told(ReplayStarted(len(self.frames[0].messages)))

    @staticmethod
    def _child(parent: Frame, label: str) -> Frame:
        if parent.live or not parent.runs or parent.runs[0].label != label:
            return Frame((), live=True)
        run = parent.runs.pop(0)
        return Frame(run.messages[run.inherited:], run.subroutines)  # and the ones inside it

    def go_live(self) -> None:
        """The replay is over: the answerers behind it answer from here on."""
        if not self.replaying:
            return
        if not self.started:
            self.begin()
        self.replaying = False
        self.settle()
        self.state.release()
        root = self.frames[0]
        # From here the run records the state's changes, from the state as it was when the
        # last message it followed was added.
        self.state.follow(rewound(self.saved_state, self.saved_internal, root.messages, root.at))
        self.state.emit(CaughtUp(root.at, len(root.messages)))

    # -- answering -------------------------------------------------------------------------

    def ready(self, request: Request[Any]) -> Any:
        """The driver asks first, inside its pump, while the replay replays: what was saved
        (no trip through the answerers per saved request), else ``NOTHING`` and the request
        goes to the answerers: the replay went live, or it is a turn's ``ListTools``."""
        answers = self.answers
        cls = request.__class__
        if cls not in answers:  # a subclass of a request: answered as the request it extends
            answers[cls] = answers[kind(cls)]
        return answers[cls](request)

    def missed(self) -> Any:
        """The saved conversation does not answer: the replay is over."""
        self.go_live()
        return NOTHING

    # What the saved conversation answers each kind of request with (counted as the live
    # answer was), or ``missed()``.

    def saved_call_model(self, request: CallModel) -> Any:
        frame = self.frames[-1]
        at = frame.at
        nxt = frame.messages[at] if at < len(frame.messages) else None
        if frame.live or request.purpose != "reply" or nxt is None or nxt.role != "assistant":
            return self.missed()
        usage = nxt.usage if nxt.metadata else None  # (no facts: none reported, no call)
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

    def saved_take_steered(self, request: TakeSteered) -> Any:
        """The user messages saved at this safe point (a steered message was taken here), or
        none; past the saved messages, the answerers take what ``Session.queued`` holds (a
        resumed run's), and the replay goes on to the request after it."""
        frame = self.frames[-1]
        at, messages = frame.at, frame.messages
        if frame.live or at >= len(messages):  # the answerers', if any is queued
            return NOTHING if self.state.session.queued else ()
        if messages[at].role != "user":  # (the common case: none was taken here)
            return ()
        end = at + 1
        while end < len(messages) and messages[end].role == "user":
            end += 1
        return tuple(messages[at:end])

    def saved_ask_user(self, request: AskUser) -> Any:
        frame = self.frames[-1]
        nxt = frame.next
        if frame.live or nxt is None or nxt.role != "user":
            return self.missed()
        return nxt.content

    def saved_run_tools(self, request: RunTools) -> Any:
        frame = self.frames[-1]
        return self.missed() if frame.live else self._tool_runs(frame, request)

    def saved_store_tool_run(self, request: StoreToolRun) -> Any:
        # What the tool stored is in the saved state (the last value stored under its key:
        # a resumed run sees the saved state throughout its replay).
        if self.frames[-1].live or request.store_as not in self.saved_state:
            return self.missed()
        self.tally[5] += sum(not inv.tool.free_of_limits for inv in request.invocations)
        return [ToolRun(self.saved_state[request.store_as]) for _ in request.invocations]

    def saved_run_hooks(self, request: RunHooks) -> Any:
        # They ran before: the saved state holds what they changed.
        return self.missed() if self.frames[-1].live else None

    def saved_approve(self, request: Approve) -> Any:
        approvals = self.approvals
        if self.frames[-1].live or not all(call.id in approvals for call in request.calls):
            return self.missed()
        return [approvals[call.id] for call in request.calls]

    def saved_hand_off(self, request: HandOff) -> Any:
        frame = self.frames[-1]
        return self.missed() if frame.live else self._handed(frame, request)

    def saved_check_guards(self, request: CheckGuards) -> Any:
        # The stored value is what its guards made of it: no guard runs again (a ModelGuard's
        # model is not asked again); the marks stored with it stand.
        frame = self.frames[-1]
        if frame.live:
            return self.missed()
        if request.on == "output":
            return None  # the reply replayed is the stored one, marks and all
        recorded = recorded_input(frame.messages, frame.at, request, self.state.plan.guards) \
            if request.on == "input" else recorded_call(frame.messages, frame.at, request)
        if recorded is not None and recorded.blocked:
            self.state.guarded = True  # kept from the model, as when it was blocked
        return recorded

    def saved_list_tools(self, request: ListTools) -> Any:
        return NOTHING  # not a step of the conversation: the answerers list them (below)

    # A turn's ``ListTools`` is the one request that comes to the answerers while replaying
    # (every other was put to ``ready`` first, in the pump, which went live when the saved
    # conversation could not answer it). Listing a turn's toolsets is not a step of the
    # conversation: the replay goes on, and the one behind it lists them, once per replay (a
    # server that is down costs one attempt, not one per replayed turn; a call of one of its
    # tools is answered from the saved results).

    def list_tools(self, request: ListTools) -> list[Listed]:
        if not self.replaying:
            return self.inner.answer(request)  # type: ignore[no-any-return]
        todo = self._to_list(request)
        return self._listed(request, todo, self.inner.answer(todo) if todo else [])

    async def alist_tools(self, request: ListTools) -> list[Listed]:
        if not self.replaying:
            return await self.inner.aanswer(request)  # type: ignore[no-any-return]
        todo = self._to_list(request)
        return self._listed(request, todo, await self.inner.aanswer(todo) if todo else [])

    def _to_list(self, request: ListTools) -> ListTools | None:
        todo = tuple(t for t in request.toolsets if id(t) not in self.listed)
        return ListTools(todo) if todo else None

    def _listed(self, request: ListTools, todo: ListTools | None, listings: list[Listed]
                ) -> list[Listed]:
        for toolset, listing in zip(todo.toolsets if todo else (), listings, strict=True):
            self.listed[id(toolset)] = (toolset, listing)
        return [self.listed[id(toolset)][1] for toolset in request.toolsets]

    def _handed(self, frame: Frame, request: HandOff) -> Any:
        """A handoff: the next message said during it, ``None`` where it was handed back
        (``Session.internal`` says after how many), or ``missed()`` where it still goes on."""
        ended = handed_back(self.saved_internal, request.call.id)
        if ended is not None and request.said >= ended:
            return None
        nxt = frame.next
        if nxt is not None and nxt.role in ("user", "assistant") and not nxt.tool_calls:
            return nxt
        return self.missed()

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
                return self.missed()
        runs: list[ToolRun] = []
        counted = 0  # the calls the limits count, as the live answer counted them
        for inv in invocations:
            tool = inv.tool
            runs.append(rerun(inv) if tool.rerun_on_resume else
                        saved_run(results[inv.call.id]))
            counted += not tool.free_of_limits
        self.tally[5] += counted
        return runs



class HistoryReplay(Replay):
    """The replay of a client's history (API.md §25: a conversation an OpenAI-compatible
    client sends whole): the same replay, over what the client saw. The client's user
    messages answer the template's asks and its assistant messages the model calls they
    stand for; the template's own messages, which the client may not hold (its system
    prompt, scripted words), are taken where the template says them (``adopts``), and a
    scripted message the client holds joined to the reply after it (the reply's text is the
    turn's texts joined by a blank line) is split from that reply. ``used`` counts the
    client's messages the replay followed: a history the template cannot have produced
    stops short of its end."""

    __slots__ = ("taken",)

    def __init__(self, inner: Any, saved: Session, state: RunState) -> None:
        super().__init__(inner, saved, state)
        self.frames[0].messages = list(saved.messages)  # grows by the template's own
        self.taken = 0

    def adopts(self, frame: Frame, message: Message) -> bool:
        if len(self.frames) != 1 or frame.at >= len(frame.messages):
            return False  # past the client's history, the run goes on live
        messages = frame.messages
        assert isinstance(messages, list)
        nxt = messages[frame.at]
        if message.role == "assistant" == nxt.role and isinstance(message.content, str) \
                and isinstance(nxt.content, str) and message.content \
                and nxt.content.startswith(message.content + "\n\n"):
            messages[frame.at] = Message("assistant", nxt.content[len(message.content) + 2:])
        messages.insert(frame.at, message)
        frame.at += 1
        self.taken += 1
        return True

    @property
    def used(self) -> int:
        """How many of the client's messages the replay followed."""
        return self.frames[0].at - self.taken
