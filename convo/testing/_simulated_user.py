"""SimulatedUser: a user interface whose answers come from a model playing the user.

The model (any convo model: a ``MockModel`` for a deterministic test, an ``OpenAIModel`` for
a live run) is prompted with a persona, a goal and the conversation so far with the roles
swapped: the bot's messages are its "user" messages, and its own earlier answers are its
"assistant" messages. System messages, tool calls and tool results of the bot are not shown.

It ends the run (status ``stopped``, as a person who leaves does) when:

- its reply contains ``DONE_MARKER`` (``"[DONE]"``): the goal was reached. Text beside the
  marker is said first, and the run ends when it is next asked; a reply that is only the
  marker ends it at once;
- it has answered ``max_turns`` times and is asked again;
- ``stop_when(session)`` is true when it is asked.

``.stopped_because`` says which (``"done"``, ``"max_turns"``, ``"stop_when"``, or ``None``
while it has not stopped it), and ``.assert_goal_reached()`` fails a test, with the
conversation, unless the user said it was done (or ``stop_when`` was met).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from .._interfaces.base import UserInterface
from .._messages import Message
from .._session import Session
from ..models._base import Model
from ..models._script import format_conversation

DONE_MARKER: Final = "[DONE]"

PROMPT: Final = """\
You are playing a user talking to an assistant, to test the assistant. Stay in character.

Who you are: {persona}
Your goal: {goal}

Write only what this user would type next, one message at a time, without quotes or \
explanations. When your goal has been reached, or you are sure it cannot be, write \
{marker} (you may say a last sentence before it)."""

KICKOFF: Final = "(The conversation starts. Write your first message.)"


class SimulatedUser(UserInterface):
    """A ``UserInterface`` played by ``model`` with a ``persona`` and a ``goal``.

    See the module docstring for when it ends a run. ``.replies`` holds what it said (the
    marker removed), ``.prompts`` what its model was asked each time.
    """

    DONE_MARKER: Final = DONE_MARKER

    def __init__(self, model: Model, *, persona: str, goal: str, max_turns: int = 10,
                 stop_when: Callable[[Session], bool] | None = None) -> None:
        if max_turns < 1:
            raise ValueError(f"SimulatedUser: max_turns must be at least 1, got {max_turns}")
        if not callable(getattr(model, "complete", None)):
            raise TypeError(f"SimulatedUser: model must be a convo model (MockModel, "
                            f"OpenAIModel, ...), got {type(model).__name__}")
        self.model = model
        self.persona = persona
        self.goal = goal
        self.max_turns = max_turns
        self.stop_when = stop_when
        self.replies: list[str] = []
        self.prompts: list[list[Message]] = []
        self.stopped_because: str | None = None
        self._done = False

    # -- the UserInterface protocol ------------------------------------------------------------

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        self._check_stop(session)
        prompt = self.prompt(session, instruction)
        self.prompts.append(prompt)
        return self._take(self.model.complete(prompt))

    async def aask(self, session: Session, instruction: str | None, default: str | None) -> str:
        self._check_stop(session)
        prompt = self.prompt(session, instruction)
        self.prompts.append(prompt)
        return self._take(await self.model.acomplete(prompt))

    # -- how it works --------------------------------------------------------------------------

    def prompt(self, session: Session, instruction: str | None = None) -> list[Message]:
        """What the model playing the user is sent: the persona and goal, then the
        conversation with the roles swapped."""
        system = PROMPT.format(persona=self.persona, goal=self.goal, marker=DONE_MARKER)
        if instruction:
            system += f"\n\nThe assistant's form asks: {instruction}"
        messages = [Message("system", system), *swap_roles(session.messages)]
        if len(messages) == 1:
            messages.append(Message("user", KICKOFF))
        return messages

    def _check_stop(self, session: Session) -> None:
        if self._done:
            self._stop("done")
        if self.stop_when is not None and self.stop_when(session):
            self._stop("stop_when")
        if len(self.replies) >= self.max_turns:
            self._stop("max_turns")

    def _stop(self, why: str) -> None:
        self.stopped_because = why
        raise EOFError(f"SimulatedUser stopped: {self.describe_stop()}")

    def _take(self, reply: Message) -> str:
        text = reply.text
        if DONE_MARKER.lower() in text.lower():
            self._done = True
            start = text.lower().index(DONE_MARKER.lower())
            text = (text[:start] + text[start + len(DONE_MARKER):]).strip()
            if not text:
                self._stop("done")
        self.replies.append(text)
        return text

    # -- for tests -----------------------------------------------------------------------------

    @property
    def turns(self) -> int:
        """How many messages it has written."""
        return len(self.replies)

    @property
    def goal_reached(self) -> bool:
        """Whether it said it was done, or ``stop_when`` was met."""
        return self._done or self.stopped_because == "stop_when"

    def describe_stop(self) -> str:
        why = self.stopped_because
        if why == "done":
            return f"it said its goal was reached, after {self.turns} turns"
        if why == "stop_when":
            return f"stop_when was met, after {self.turns} turns"
        if why == "max_turns":
            return f"it reached max_turns={self.max_turns} without reaching its goal"
        return f"it has not said it was done ({self.turns} turns so far)"

    def assert_goal_reached(self, session: Session | None = None) -> None:
        """Fail unless the user said it was done (or ``stop_when`` was met).

        Pass the session to see the conversation in the failure.
        """
        __tracebackhide__ = True
        if self.goal_reached:
            return
        lines = [f"the simulated user did not reach its goal: {self.describe_stop()}",
                 f"  persona: {self.persona}", f"  goal: {self.goal}"]
        if session is not None:
            if session.outcome is not None:
                lines.append(f"  the run: {session.outcome.describe()}")
            lines.append(f"The conversation ({len(session.messages)} messages):")
            lines.append(format_conversation(session.messages, last=20))
        raise AssertionError("\n".join(lines))

    def __repr__(self) -> str:
        return (f"SimulatedUser({self.model!r}, persona={self.persona!r}, goal={self.goal!r}, "
                f"{self.turns} turns)")


def swap_roles(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the user sees it: the bot's replies become "user" messages and the
    user's become "assistant" messages; system messages and tool traffic are left out."""
    swapped: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.content:
            swapped.append(Message("user", message.content))
        elif message.role == "user":
            swapped.append(Message("assistant", message.content))
    return swapped

