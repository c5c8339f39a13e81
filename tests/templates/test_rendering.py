"""Jinja in templates (API.md §2): one environment, StrictUndefined, no escaping, early errors."""

from __future__ import annotations

import pytest

from convo import Message, RenderError, Runner, RunStatus, Session, TemplateSyntaxError
from convo._errors import DefinitionError, RunError
from convo._rendering import ENVIRONMENT
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    MessageTemplate,
    SystemTemplate,
    UserTemplate,
)


def _run(template: MessageTemplate | LinearTemplate, **state: object) -> Session:
    return Runner(None, template).run(Session(state=state))


def test_state_variables_are_rendered() -> None:
    session = _run(SystemTemplate("You teach {{ subject }} to {{ who | upper }}."),
                   subject="math", who="kids")
    assert session.messages == [Message("system", "You teach math to KIDS.")]


def test_chat_text_is_not_html_escaped() -> None:
    session = _run(MessageTemplate("{{ show }} <b>'quoted'</b>", "user"), show="Tom & Jerry")
    assert session.messages == [Message("user", "Tom & Jerry <b>'quoted'</b>")]
    assert ENVIRONMENT.autoescape is False


def test_text_without_markup_is_kept_verbatim() -> None:
    session = _run(AssistantTemplate("Tom & Jerry }} {not jinja}"))
    assert session.messages == [Message("assistant", "Tom & Jerry }} {not jinja}")]


def test_syntax_error_is_raised_at_construction_naming_the_template() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        SystemTemplate("Hello {{ name ", template_id="greeting")
    assert str(info.value) == (
        "SystemTemplate(template_id='greeting'): Jinja syntax error on line 1: unexpected end "
        "of template, expected 'end of print statement'. in 'Hello {{ name '"
    )
    assert isinstance(info.value, DefinitionError)


@pytest.mark.parametrize(
    ("build", "label"),
    [
        (lambda: MessageTemplate("{% if %}", "user"), "MessageTemplate"),
        (lambda: UserTemplate("{% for x in %}"), "UserTemplate"),
        (lambda: AssistantTemplate("{{ }}", template_id="a1"),
         "AssistantTemplate(template_id='a1')"),
    ],
)
def test_every_text_template_compiles_at_construction(build: object, label: str) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        build()  # type: ignore[operator]
    assert str(info.value).startswith(f"{label}: Jinja syntax error on line 1: ")


def test_undefined_variable_at_render_names_the_variable_and_the_template() -> None:
    template = SystemTemplate("Hello {{ name }}", template_id="greeting")
    session = Session(state={"other": 1})
    with pytest.raises(RenderError) as info:
        Runner(None, template).run(session)
    assert str(info.value) == (
        "SystemTemplate(template_id='greeting'): undefined variable in 'Hello {{ name }}': "
        "'name' is undefined. Defined: last_message, messages, other (set it in session.state)"
    )
    assert isinstance(info.value, RunError)
    assert session.outcome is not None and session.outcome.status is RunStatus.ERROR


def test_undefined_attribute_is_an_error_too() -> None:
    with pytest.raises(RenderError) as info:
        _run(UserTemplate("{{ user.name }}"), user={})
    assert "'dict object' has no attribute 'name'" in str(info.value)
    assert str(info.value).startswith("UserTemplate: undefined variable in '{{ user.name }}'")


def test_messages_and_last_message_are_variables() -> None:
    template = LinearTemplate([
        UserTemplate("What is 2+2?"),
        AssistantTemplate("You asked: {{ last_message.content }} ({{ messages | length }} so far)"),
    ])
    session = _run(template)
    assert session.messages[-1] == Message("assistant", "You asked: What is 2+2? (1 so far)")


def test_disable_jinja_keeps_the_text_as_is() -> None:
    session = _run(MessageTemplate("{{ not rendered", "assistant", disable_jinja=True))
    assert session.messages == [Message("assistant", "{{ not rendered")]


def test_state_changes_between_renders_are_seen() -> None:
    template = SystemTemplate("n={{ n }}")
    assert _run(template, n=1).messages == [Message("system", "n=1")]
    assert _run(template, n=2).messages == [Message("system", "n=2")]


def test_one_shared_environment() -> None:
    ENVIRONMENT.filters["shout"] = lambda s: f"{s}!"
    try:
        assert _run(SystemTemplate("{{ 'hi' | shout }}")).messages == [Message("system", "hi!")]
    finally:
        del ENVIRONMENT.filters["shout"]


def test_failing_filter_is_a_render_error() -> None:
    with pytest.raises(RenderError) as info:
        _run(SystemTemplate("{{ 1 / n }}"), n=0)
    assert str(info.value) == (
        "SystemTemplate: rendering '{{ 1 / n }}' failed: ZeroDivisionError: division by zero"
    )
