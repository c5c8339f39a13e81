"""The public API is curated: __all__ is pinned, and every name of ../shared/API.md is there."""

from __future__ import annotations

from process_kit import printed

import convo
import convo.testing
from convo import RunStatus
from convo.tools import registry

API_NAMES = """
Message ToolCall Session TurnResult Outcome RunStatus
Template MessageTemplate SystemTemplate UserTemplate AssistantTemplate GenerateTemplate
LinearTemplate LoopTemplate IfTemplate BreakTemplate EndTemplate ToolingTemplate
Tool ToolArgument ToolResult tool TerminateResponse FinishTool EndConversationTool
FinishResponseTool FinishTaskTool ReachedEndTemplateException DEFAULT_RESTRICTION_MESSAGE LoopGuard
Model OpenAIModel MockModel FunctionModel EchoModel
Runner CommandLineRunner UserInterface CLIInterface EchoMockInterface ScriptedInterface
StateMachineTemplate Transition GotoTemplate SubroutineTemplate StateEntered
ContextWindow
MCPServer
""".split()

EXTRA_NAMES = """
ConvoError DefinitionError RunError RenderError ModelError ScriptError InterfaceError
TemplateSyntaxError ToolDefinitionError ToolArgumentError Event Usage __version__
ToolCallParseError TranscriptError
ToolContext ToolRetry
ContextTrimmed ContextLengthError
""".split()

# API.md §10 (approval and limits).
API_NAMES += "Approval ApprovalRequested ApprovalDecided Limits".split()
# API.md §14 (one core, resuming from Python).
API_NAMES += "MessageAdded load_transcript".split()
# API.md §15 (the Responses API).
API_NAMES += "ReasoningDelta TextDelta ReplyTruncated".split()
# API.md §22 (a template as a tool, a tool from code, hooks).
API_NAMES += "SubroutineTool ExecuteToolTemplate".split()
# API.md §16 (images, audio and documents).
API_NAMES += "Text Image Audio Document".split()
# API.md §23 (models from Anthropic and Google, natively).
API_NAMES += ["AnthropicModel", "GeminiModel"]
# API.md §19 (serving people: human handoff).
API_NAMES += ["HandoffTool"]
# API.md §27 (guardrails).
API_NAMES += "Guard ModelGuard GuardTripped".split()


def test_all_is_exactly_the_curated_api() -> None:
    assert sorted(convo.__all__) == sorted(API_NAMES + EXTRA_NAMES)


def test_every_name_resolves() -> None:
    for name in convo.__all__:
        assert getattr(convo, name) is not None, name


def test_test_kit_names() -> None:
    for name in ("OpenAIServer", "ErrorReply", "SlowReply", "SimulatedUser", "SmokeModel",
                 "assert_matches_snapshot"):
        assert getattr(convo.testing, name) is not None
    for name in convo.testing.__all__:
        assert getattr(convo.testing, name) is not None, name


def test_run_status_values_are_exactly_the_contract() -> None:
    assert [s.value for s in RunStatus] == [
        "completed", "ended", "pending_review", "max_iterations", "iterations_exceeded",
        "stopped", "error", "llm_empty_response_error", "implicit_completion", "max_messages",
        "usage_limit", "guarded",
    ]
    assert RunStatus("ended") == "ended"


def test_registry_has_the_four_built_in_tools() -> None:
    # A doc block registers a tool of its own (docs/tools.md): the built-ins come first.
    assert list(registry)[:4] == [
        "finishTool", "endConversationTool", "finishResponseTool", "finishTaskTool",
    ]


def test_import_convo_does_not_import_pydantic_jinja2_or_docstring_parser() -> None:
    code = ("import sys, convo; print([m for m in ('pydantic', 'jinja2', 'docstring_parser') "
            "if m in sys.modules])")
    assert printed(code) == "[]"


def test_import_convo_does_not_import_openai() -> None:
    code = "import sys, convo; print('openai' in sys.modules)"
    assert printed(code) == "False"


def test_import_convo_does_not_import_anthropic_or_google_genai() -> None:
    code = ("import sys, convo, convo.models, convo.testing, convo.models._gemini.wire, "
            "convo.testing._server; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] == 'anthropic' or m.startswith('google')))")
    assert printed(code) == "[]"


def test_import_convo_does_not_import_the_terminal_chats_libraries() -> None:
    code = ("import sys, convo; print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'prompt_toolkit', 'rich', 'pygments', 'sqlite3'}))")
    assert printed(code) == "[]"
