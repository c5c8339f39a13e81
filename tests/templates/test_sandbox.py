"""Template text is rendered in Jinja's immutable sandbox: the escapes from
Jinja's security notes are ``RenderError``\\ s naming the template; user input and state values
are never rendered as templates."""

from __future__ import annotations

import pytest
from process_kit import printed

from convo import RenderError, Runner, RunStatus, ScriptedInterface, Session
from convo.templates import LinearTemplate, SystemTemplate, UserTemplate

ESCAPES = [
    "{{ lipsum.__globals__['os'].popen('echo pwned').read() }}",
    "{{ cycler.__init__.__globals__.os.popen('echo pwned').read() }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__['__builtins__'] }}",
    "{{ '{0.__class__.__base__}'.format(name) }}",
    "{{ name.__class__ }}",
    "{{ items.append('x') }}",
    "{{ items.pop() }}",
    "{{ table.update(a=2) }}",
    "{{ table.clear() }}",
]


@pytest.mark.parametrize("text", ESCAPES)
def test_sandbox_escapes_are_render_errors_naming_the_template(text: str) -> None:
    state = {"name": "Ann", "items": [1], "table": {"a": 1}}
    runner = Runner(None, SystemTemplate(text, template_id="hostile"), raise_errors=False)
    session = runner.run(Session(state=state))
    assert session.outcome is not None and session.outcome.status == RunStatus.ERROR
    error = session.outcome.error or ""
    assert error.startswith("RenderError: SystemTemplate(template_id='hostile'): the template "
                            "text "), error
    assert "tried something the sandbox forbids" in error
    assert "pwned\n" not in error  # the command's output: it never ran
    assert session.messages == []
    assert state == {"name": "Ann", "items": [1], "table": {"a": 1}}  # nothing changed


def test_a_huge_range_is_refused() -> None:
    with pytest.raises(RenderError, match=r"^SystemTemplate: rendering .* failed: "
                                          r"OverflowError: Range too big"):
        Runner(None, SystemTemplate("{{ range(10**9) | length }}")).run()


def test_ordinary_templates_still_render() -> None:
    text = "{% for i in items %}{{ i * 2 }},{% endfor %} {{ name | upper }} {{ table.a }}"
    session = Runner(None, SystemTemplate(text)).run(
        Session(state={"items": [1, 2], "name": "ann", "table": {"a": 3}}))
    assert session.messages[0].content == "2,4, ANN 3"


def test_user_input_and_state_values_are_never_rendered() -> None:
    hostile = "{{ lipsum.__globals__['os'].popen('echo pwned').read() }} {{ 7 * 7 }}"
    template = LinearTemplate([SystemTemplate("state: {{ value }}"), UserTemplate()])
    session = Runner(None, template, ScriptedInterface([hostile])).run(
        Session(state={"value": hostile}))
    assert [m.content for m in session.messages] == [f"state: {hostile}", hostile]


def test_jinja_is_still_imported_lazily() -> None:
    code = ("import sys, convo; convo.SystemTemplate('no markup'); "
            "print('jinja2' in sys.modules)")
    assert printed(code) == "False"
