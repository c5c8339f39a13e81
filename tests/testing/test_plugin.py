"""The pytest plugin from a user's point of view: a test file in a fresh directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing_kit import fails_saying

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CHAT = """
from convo import AssistantTemplate, LoopTemplate, Runner, UserTemplate

chat = LoopTemplate([UserTemplate(), AssistantTemplate()])
"""


def test_fixtures_are_available_without_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHAT + """
def test_chat(mock_model, scripted_user):
    model = mock_model(["Hello!", "Bye!"])
    session = Runner(model, chat, scripted_user(["hi", "bye"])).run()
    assert session.outcome.status == "stopped"
    assert [m.content for m in session.messages] == ["hi", "Hello!", "bye", "Bye!"]
""")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_an_unused_model_reply_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHAT + """
def test_chat(mock_model, scripted_user):
    model = mock_model(["Hello!", "never said"])
    Runner(model, chat, scripted_user(["hi"])).run()
""")
    fails_saying(pytester, [
        "*the conversation ended before its script did*",
        "*mock_model #1: 1 of 2 scripted replies were not used (the model was called 1 times)",
        "*used   reply 1: 'Hello!'",
        "*UNUSED reply 2: 'never said'",
    ])


def test_an_unused_user_reply_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
from convo import EndTemplate, LinearTemplate, Runner, UserTemplate

def test_chat(mock_model, scripted_user):
    tree = LinearTemplate([UserTemplate(), EndTemplate("Bye")])
    Runner(mock_model([]), tree, scripted_user(["hi", "left over"])).run()
""")
    fails_saying(pytester, [
        "*scripted_user #1: 1 of 2 scripted replies were not used (the user was asked 1 times)",
        "*UNUSED reply 2: 'left over'",
    ])


def test_check_complete_false_allows_leftovers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHAT + """
def test_chat(mock_model, scripted_user):
    model = mock_model(["Hello!", "spare"], check_complete=False)
    Runner(model, chat, scripted_user(["hi", "spare"], check_complete=False)).run()

def test_repeat_last_is_never_incomplete(mock_model, scripted_user):
    model = mock_model(["Hello!", "again"], repeat_last=True)
    Runner(model, chat, scripted_user(["hi"])).run()
""")
    pytester.runpytest().assert_outcomes(passed=2)


def test_a_failing_test_shows_what_the_scripts_did(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHAT + """
def test_chat(mock_model, scripted_user):
    model = mock_model(["Hello!"])
    Runner(model, chat, scripted_user(["hi", "and then?"])).run()
""")
    result = fails_saying(pytester, [
        # the model's own error: which call ran out, and the conversation so far
        "*ScriptError: MockModel ran out of replies: 1 scripted, and model call 2 *",
        "*2] user: 'and then?'*",
        # the plugin's report section
        "*Captured convo scripts call*",
        "mock_model #1: 1 replies scripted, called 2 times",
        "scripted_user #1: 2 replies scripted, asked 2 times",
    ])
    # a failure caused by the script does not also complain about leftovers
    result.stdout.no_fnmatch_line("*ended before its script did*")


def test_a_skipped_test_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import pytest

def test_skipped(mock_model):
    mock_model(["unused"])
    pytest.skip("not today")
""")
    pytester.runpytest().assert_outcomes(skipped=1)


def test_no_convo_removes_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
def test_chat(mock_model):
    pass
""")
    result = pytester.runpytest("-p", "no:convo")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'mock_model' not found*"])


def test_openai_server_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
from convo import OpenAIModel, Runner, UserTemplate, AssistantTemplate, LinearTemplate

def test_server(openai_server):
    assert openai_server.requests == []
    openai_server.add("Hello from the fake server")
    model = OpenAIModel(base_url=openai_server.base_url, api_key="test", max_retries=0)
    tree = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
    session = Runner(model, tree).run()
    assert session.messages[-1].content == "Hello from the fake server"
    assert openai_server.requests[0]["messages"][-1]["content"] == "hi"
""")
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_example_test_file_passes(pytester: pytest.Pytester) -> None:
    source = (EXAMPLES / "test_chatbot.py").read_text(encoding="utf-8")
    pytester.makepyfile(test_chatbot=source)
    result = pytester.runpytest("-W", "error")
    # A copy starts without its snapshot: the snapshot test says how to write it.
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([
        "*there is no snapshot tests/snapshots/test_chatbot/test_orders_a_coffee.txt yet: run "
        "pytest --convo-update-snapshots to accept this run's conversation (it writes the "
        "file)*"])
    pytester.runpytest("--convo-update-snapshots").assert_outcomes(passed=5)
    pytester.runpytest("-W", "error").assert_outcomes(passed=5)
