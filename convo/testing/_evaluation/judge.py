"""The judge: a model grades a conversation against a rubric, pass or fail with a reason.

The judge is sent one system message (how to grade, and the rubric) and one user message (the
transcript: each message on its own lines, tool calls and their results included, ids left
out so that a re-run sends the very same request). It answers with a JSON object
``{"pass": true|false, "reason": "..."}``; a reply that starts with ``PASS`` or ``FAIL`` is read
too. Anything else fails the check, quoting the reply.
"""

from __future__ import annotations

from typing import Final

from ..._messages import Message
from ..._session import Session
from ...guards._base import verdict
from ...models._base import Model

PROMPT: Final = """\
You grade a conversation between a user and an assistant (a bot under test) against a rubric.
Read the transcript, decide whether the assistant met the rubric, and answer with only a JSON \
object: {{"pass": true or false, "reason": "one sentence saying why"}}.

Rubric:
{rubric}"""

def transcript(session: Session) -> str:
    """The conversation as the judge reads it (no system messages, no ids)."""
    lines: list[str] = []
    for message in session.messages:
        if message.role == "system":
            continue
        role = f"tool {message.name}" if message.role == "tool" and message.name else message.role
        if message.content:
            lines.append(f"{role}: {message.content}")
        for call in message.tool_calls:
            lines.append(f"{role} calls {call.name}({call.arguments_json()})")
    return "\n".join(lines) or "(no messages)"


def judge_request(rubric: str, session: Session) -> list[Message]:
    """The messages a judge is sent."""
    return [Message("system", PROMPT.format(rubric=rubric.strip())),
            Message("user", f"Transcript:\n{transcript(session)}")]


async def judge(model: Model, rubric: str, session: Session) -> tuple[bool, str]:
    """Ask ``model`` whether ``session`` meets ``rubric``."""
    reply = await model.acomplete(judge_request(rubric, session))
    return verdict(reply.text)
