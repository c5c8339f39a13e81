"""A subroutine: an email drafted off to the side, only the final draft kept.

``SubroutineTemplate`` runs its template on a session of its own that starts with the
parent's system messages (``inherit="system"``). Inside, a writer drafts, checks the draft
with a tool and rewrites it; the main conversation gets only the last assistant message
(``keep="last"``). The child's whole session is on ``session.subroutines`` and in a saved
transcript as one ``subroutine`` line.

Run it: ``python examples/draft_email.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SubroutineTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def check_length(text: str) -> str:
    """Check that an email is short enough.

    Args:
        text: The draft.
    """
    words = len(text.split())
    return "OK" if words <= 25 else f"Too long: {words} words, keep it under 25."


draft = SubroutineTemplate(
    LinearTemplate([
        UserTemplate("Draft a short email to {{ customer }} confirming their refund. Check "
                     "its length with check_length, then reply with the final draft only."),
        ToolingTemplate([check_length]),
    ]),
    inherit="system", keep="last", template_id="draft email",
)

template = LinearTemplate([
    SystemTemplate("You are the support assistant of Mugs & Co."),
    UserTemplate(description="What can we do for you?"),
    draft,
    LoopTemplate([UserTemplate(), AssistantTemplate()]),
])

state = {"customer": "Ann"}

mock_model = MockModel([
    # the subroutine: a first draft is too long, the second passes
    "{check_length(text='Dear Ann, we are very happy to tell you that after a careful review "
    "of your account we have decided to refund the full amount that you paid for the mug.')}",
    "{check_length(text='Dear Ann, your refund of 30 USD is on its way. Mugs & Co.')}",
    "Dear Ann, your refund of 30 USD is on its way. Mugs & Co.",
    # the main conversation
    "You're welcome! Anything else?",
])

demo_input = ["Please confirm my refund by email.", "Thanks!"]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
