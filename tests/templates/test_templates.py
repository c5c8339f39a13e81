"""Every template of API.md §2: behaviour, arguments, reuse and validation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from provider_fakes import FakeProvider, plain

from convo import (
    DefinitionError,
    Message,
    ReachedEndTemplateException,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
)
from convo._errors import RunError
from convo._requests import AskUser, CallModel, CheckGuards, Flow
from convo.models import FunctionModel, MockModel
from convo.models._base import Model, ToolSchemas
from convo.templates import (
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    GenerateTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    MessageTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)

NO_CONTENTS = ("Gemini and Anthropic refuse a request with no message (Gemini's SDK before "
               "sending, Anthropic's API with a 400): a first model call with no message "
               "cannot run there")


def _run(template: Template, model: Model | None = None,
         replies: Sequence[str] = (), **kw: object) -> Session:
    return Runner(model, template, ScriptedInterface(replies), **kw).run()  # type: ignore[arg-type]


def _contents(session: Session) -> list[str]:
    return [m.content for m in session.messages]


def _said(text: str) -> object:
    return lambda session: session.last_message is not None and session.last_message.content == text


# -- rendering without a runner: templates are sans-IO generators -------------------------------

def test_render_is_a_generator_of_messages_and_requests() -> None:
    session = Session()
    flow = LinearTemplate([SystemTemplate("sys"), UserTemplate(description="Q?", default="d"),
                           AssistantTemplate()]).render(session)
    assert next(flow) == Message("system", "sys")
    assert flow.send(None) == AskUser("Q?", "d")
    # Each user message and reply is put to the guards first (None: nothing changed).
    assert flow.send("typed") == CheckGuards("input", Message("user", "typed"))
    assert flow.send(None) == Message("user", "typed")
    assert flow.send(None) == CallModel(guards=())
    assert flow.send(Message("assistant", "reply")) == CheckGuards(
        "output", Message("assistant", "reply"))
    assert flow.send(None) == Message("assistant", "reply")
    with pytest.raises(StopIteration) as stop:
        flow.send(None)
    assert stop.value.value is session
    assert session.messages == []  # appending is the runner's job


# -- message templates ----------------------------------------------------------------------------

def test_message_template_appends_one_message_with_its_role() -> None:
    template = MessageTemplate("Hi {{ name }}", "assistant")
    session = Runner(None, template).run(Session(state={"name": "Ada"}))
    assert session.messages == [Message("assistant", "Hi Ada")]
    session = Runner(None, MessageTemplate("42", "tool")).run()
    assert session.messages == [Message("tool", "42")]


def test_message_template_rejects_an_unknown_role() -> None:
    with pytest.raises(ValueError) as info:
        MessageTemplate("x", "bot")  # type: ignore[arg-type]
    assert str(info.value) == (
        "role must be one of 'system', 'user', 'assistant', 'tool'; got 'bot'"
    )


def test_system_template() -> None:
    assert _run(SystemTemplate("Be brief.")).messages == [Message("system", "Be brief.")]
    assert SystemTemplate("x").role == "system"


def test_user_template_with_content_is_static() -> None:
    ui = ScriptedInterface(["never asked"])
    session = Runner(None, UserTemplate("Hello"), ui).run()
    assert session.messages == [Message("user", "Hello")]
    assert ui.asked == []


def test_user_template_without_content_asks_the_user_with_its_description() -> None:
    ui = ScriptedInterface(["Ada"])
    session = Runner(None, UserTemplate(description="Your name?"), ui).run()
    assert session.messages == [Message("user", "Ada")]
    assert ui.asked == ["Your name?"]


def test_user_template_default_is_used_on_empty_input() -> None:
    session = _run(LinearTemplate([UserTemplate(default="nothing"), UserTemplate(default="x")]),
                   replies=["", "typed"])
    assert _contents(session) == ["nothing", "typed"]


def test_user_template_without_default_keeps_empty_input() -> None:
    assert _contents(_run(UserTemplate(), replies=[""])) == [""]


def test_assistant_template_with_content_is_scripted() -> None:
    model = MockModel([])
    session = _run(AssistantTemplate("Welcome!"), model)
    assert session.messages == [Message("assistant", "Welcome!")]
    assert model.calls == []


def test_assistant_template_without_content_makes_one_model_call_without_tools() -> None:
    model = MockModel(["Four."])
    session = _run(LinearTemplate([UserTemplate("2+2?"), AssistantTemplate()]), model)
    assert session.messages == [Message("user", "2+2?"), Message("assistant", "Four.")]
    assert len(model.calls) == 1
    assert model.calls[0].messages == (Message("user", "2+2?"),)
    assert model.calls[0].tools == ()


def test_a_template_model_overrides_the_runners() -> None:
    runners = MockModel(["from runner"])
    own = MockModel(["from own", "own again"])
    session = _run(LinearTemplate([AssistantTemplate(model=own), AssistantTemplate(),
                                   GenerateTemplate(model=own)]), runners)
    assert _contents(session) == ["from own", "from runner", "own again"]
    own.assert_complete()
    runners.assert_complete()


def test_generate_template_appends_the_reply_with_its_role(provider_model: FakeProvider
                                                          ) -> None:
    provider_model.cannot("gemini", "anthropic", why=NO_CONTENTS)
    model = provider_model(["a reply", "a question", "a note"])
    session = _run(LinearTemplate([GenerateTemplate(), GenerateTemplate("user"),
                                   GenerateTemplate(role="system")]), model)
    assert plain(session.messages) == [Message("assistant", "a reply"),
                                       Message("user", "a question"),
                                       Message("system", "a note")]


def test_generate_template_rejects_an_unknown_role() -> None:
    with pytest.raises(ValueError, match="role must be one of"):
        GenerateTemplate("robot")  # type: ignore[arg-type]


# -- control flow ---------------------------------------------------------------------------------

def test_linear_template_renders_children_in_order_once() -> None:
    session = _run(LinearTemplate([SystemTemplate("1"), UserTemplate("2"), AssistantTemplate("3")]))
    assert _contents(session) == ["1", "2", "3"]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_loop_exit_condition_is_checked_after_a_full_pass() -> None:
    checked: list[int] = []

    def done(session: Session) -> bool:
        checked.append(len(session.messages))
        return session.messages[0].content == "stop"  # true from the first message on

    session = _run(LoopTemplate([UserTemplate(), AssistantTemplate("a"), AssistantTemplate("b")],
                                exit_condition=done), replies=["stop"])
    assert _contents(session) == ["stop", "a", "b"]
    assert checked == [3]


def test_loop_exit_condition_ends_after_the_pass_that_makes_it_true() -> None:
    session = _run(LoopTemplate([UserTemplate(), AssistantTemplate("ok")],
                                exit_condition=lambda s: s.messages[-2].content == "bye"),
                   replies=["a", "b", "bye", "never"])
    assert _contents(session) == ["a", "ok", "b", "ok", "bye", "ok"]


def test_loop_exit_loop_count() -> None:
    session = _run(LoopTemplate([AssistantTemplate("{{ messages | length }}")], exit_loop_count=3))
    assert _contents(session) == ["0", "1", "2"]
    assert _contents(_run(LoopTemplate([AssistantTemplate("x")], exit_loop_count=0))) == []


def test_loop_count_and_condition_together_stop_at_whichever_comes_first() -> None:
    loop = LoopTemplate([AssistantTemplate("x")], exit_loop_count=5,
                        exit_condition=lambda s: len(s.messages) >= 2)
    assert len(_run(loop).messages) == 2
    loop = LoopTemplate([AssistantTemplate("x")], exit_loop_count=2,
                        exit_condition=lambda s: False)
    assert len(_run(loop).messages) == 2


def test_loop_rejects_a_negative_count() -> None:
    with pytest.raises(ValueError) as info:
        LoopTemplate([AssistantTemplate("x")], exit_loop_count=-1)
    assert str(info.value) == "LoopTemplate: exit_loop_count must be >= 0, got -1"


def test_a_loop_whose_pass_adds_nothing_and_cannot_end_is_an_error() -> None:
    loop = LoopTemplate([IfTemplate(lambda s: False, AssistantTemplate("x"))], template_id="spin")
    session = Runner(None, loop, raise_errors=False).run()
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ERROR
    assert session.outcome.error == (
        "RunError: LoopTemplate(template_id='spin') would loop forever: a whole pass added no "
        "message, and it has no exit_condition or exit_loop_count"
    )
    with pytest.raises(RunError):
        Runner(None, loop).run()


def test_break_leaves_the_loop_at_once() -> None:
    loop = LoopTemplate([AssistantTemplate("a"), BreakTemplate(), AssistantTemplate("never")])
    session = _run(LinearTemplate([loop, AssistantTemplate("after")]))
    assert _contents(session) == ["a", "after"]


def test_nested_loops_break_leaves_only_the_inner_loop() -> None:
    inner = LoopTemplate([
        UserTemplate(),
        IfTemplate(_said("next"), BreakTemplate()),  # type: ignore[arg-type]
        AssistantTemplate("inner"),
    ])
    outer = LoopTemplate([AssistantTemplate("outer"), inner], exit_loop_count=2)
    session = _run(LinearTemplate([outer, AssistantTemplate("done")]),
                   replies=["a", "next", "b", "c", "next"])
    assert _contents(session) == [
        "outer", "a", "inner", "next",
        "outer", "b", "inner", "c", "inner", "next",
        "done",
    ]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_if_picks_a_branch() -> None:
    template = IfTemplate(lambda s: s.state["n"] > 0, AssistantTemplate("pos"),
                          AssistantTemplate("neg"))
    assert _contents(Runner(None, template).run(Session(state={"n": 1}))) == ["pos"]
    assert _contents(Runner(None, template).run(Session(state={"n": -1}))) == ["neg"]


def test_if_without_else_does_nothing_when_false() -> None:
    template = LinearTemplate([IfTemplate(lambda s: False, AssistantTemplate("never")),
                               AssistantTemplate("after")])
    session = _run(template)
    assert _contents(session) == ["after"]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_condition_sees_the_session() -> None:
    seen: list[int] = []
    template = LinearTemplate([UserTemplate("hi"),
                               IfTemplate(lambda s: seen.append(len(s.messages)) or True,
                                          AssistantTemplate("yes"))])
    assert _contents(_run(template)) == ["hi", "yes"]
    assert seen == [1]


# -- the end of a conversation --------------------------------------------------------------------

def test_end_template_appends_its_farewell_and_ends_the_run() -> None:
    session = _run(LinearTemplate([UserTemplate("hi"), EndTemplate("Goodbye!"),
                                   AssistantTemplate("never")]))
    assert session.messages == [Message("user", "hi"), Message("assistant", "Goodbye!")]
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.farewell) == (RunStatus.ENDED, "Goodbye!")


def test_end_template_without_farewell_appends_nothing() -> None:
    session = _run(LinearTemplate([UserTemplate("hi"), EndTemplate()]))
    assert session.messages == [Message("user", "hi")]
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.farewell) == (RunStatus.ENDED, None)


def test_end_template_raises_the_control_signal_from_its_generator() -> None:
    flow = EndTemplate("bye").render(Session())
    assert next(flow) == Message("assistant", "bye")
    with pytest.raises(ReachedEndTemplateException) as info:
        next(flow)
    assert info.value.farewell_message == "bye"


def test_two_end_templates_keep_their_own_farewells() -> None:
    polite, rude = EndTemplate("Have a lovely day!"), EndTemplate("Whatever.")
    template = LoopTemplate([
        UserTemplate(),
        IfTemplate(_said("thanks"), polite),  # type: ignore[arg-type]
        IfTemplate(_said("meh"), rude),  # type: ignore[arg-type]
        AssistantTemplate("go on"),
    ])
    first = _run(template, replies=["a", "thanks"])
    second = _run(template, replies=["meh"])
    assert _contents(first) == ["a", "go on", "thanks", "Have a lovely day!"]
    assert _contents(second) == ["meh", "Whatever."]
    assert first.outcome is not None and first.outcome.farewell == "Have a lovely day!"
    assert second.outcome is not None and second.outcome.farewell == "Whatever."
    assert (polite.farewell_message, rude.farewell_message) == ("Have a lovely day!", "Whatever.")


def test_end_from_inside_nested_loops_ends_the_whole_run_with_one_farewell() -> None:
    end = EndTemplate("See you!")
    innermost = LoopTemplate([UserTemplate(), IfTemplate(_said("quit"), end),  # type: ignore[arg-type]
                              AssistantTemplate("inner")])
    middle = LoopTemplate([AssistantTemplate("middle"), innermost, AssistantTemplate("never 1")])
    outer = LoopTemplate([middle, AssistantTemplate("never 2")])
    session = _run(LinearTemplate([outer, AssistantTemplate("never 3")]),
                   replies=["x", "quit", "unused"])
    assert _contents(session) == ["middle", "x", "inner", "quit", "See you!"]
    assert [m.content for m in session.messages].count("See you!") == 1
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.farewell) == (RunStatus.ENDED, "See you!")


# -- reuse ----------------------------------------------------------------------------------------

def test_one_template_reused_across_two_runs(provider_model: FakeProvider) -> None:
    chat = LoopTemplate([UserTemplate(), AssistantTemplate()], exit_loop_count=2)
    first = Runner(provider_model(["a1", "a2"]), chat, ScriptedInterface(["q1", "q2"])).run()
    second = Runner(provider_model(["b1", "b2"]), chat, ScriptedInterface(["r1", "r2"])).run()
    assert _contents(first) == ["q1", "a1", "q2", "a2"]
    assert _contents(second) == ["r1", "b1", "r2", "b2"]


def test_one_template_reused_in_two_trees_and_twice_in_one() -> None:
    greet = AssistantTemplate("Hi {{ name }}", template_id="greet")
    tree_a = LinearTemplate([SystemTemplate("A"), greet])
    tree_b = LoopTemplate([greet, UserTemplate()], exit_loop_count=2)
    tree_c = LinearTemplate([greet, greet])  # the same instance twice is not a duplicate id
    assert _contents(Runner(None, tree_a).run(Session(state={"name": "Ada"}))) == ["A", "Hi Ada"]
    assert _contents(Runner(None, tree_b, ScriptedInterface(["u1", "u2"])).run(
        Session(state={"name": "Bo"}))) == ["Hi Bo", "u1", "Hi Bo", "u2"]
    assert _contents(Runner(None, tree_c).run(Session(state={"name": "Cy"}))) == ["Hi Cy", "Hi Cy"]


def test_one_template_in_two_runs_at_once() -> None:
    async def reply(messages: Sequence[Message], tools: ToolSchemas) -> str:
        await asyncio.sleep(0)  # let the other run take a step
        return f"echo {messages[-1].content}"

    chat = LoopTemplate([UserTemplate(), AssistantTemplate()], exit_loop_count=3)

    async def both() -> list[Session]:
        runs = [Runner(FunctionModel(reply), chat,
                       ScriptedInterface([f"{who}{i}" for i in range(3)]))
                for who in "ab"]
        return list(await asyncio.gather(*(r.arun() for r in runs)))

    first, second = asyncio.run(both())
    assert _contents(first) == ["a0", "echo a0", "a1", "echo a1", "a2", "echo a2"]
    assert _contents(second) == ["b0", "echo b0", "b1", "echo b1", "b2", "echo b2"]


def test_interleaved_generators_of_one_template_do_not_share_state() -> None:
    loop = LoopTemplate([UserTemplate()], exit_loop_count=2)
    a, b = Session(), Session()
    flow_a, flow_b = loop.render(a), loop.render(b)
    assert next(flow_a) == AskUser()
    assert next(flow_b) == AskUser()

    def said(flow: Flow, text: str) -> object:  # the user's answer, past its (empty) guard check
        assert flow.send(text) == CheckGuards("input", Message("user", text))
        return flow.send(None)

    assert said(flow_a, "a1") == Message("user", "a1")
    assert flow_a.send(None) == AskUser()
    assert said(flow_a, "a2") == Message("user", "a2")
    with pytest.raises(StopIteration):
        flow_a.send(None)
    assert said(flow_b, "b1") == Message("user", "b1")
    assert flow_b.send(None) == AskUser()  # b still has its second pass


# -- validation when a runner is built ------------------------------------------------------------

def test_duplicate_template_id_is_rejected_naming_both_places() -> None:
    tree = LinearTemplate([
        SystemTemplate("s", template_id="intro"),
        LoopTemplate([UserTemplate(), AssistantTemplate("a", template_id="intro")],
                     exit_loop_count=1),
    ], template_id="root")
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == (
        "duplicate template_id 'intro': "
        "at LinearTemplate(template_id='root') > [0] SystemTemplate(template_id='intro') and "
        "at LinearTemplate(template_id='root') > [1] LoopTemplate > [1] "
        "AssistantTemplate(template_id='intro')"
    )


def test_duplicate_template_id_inside_if_branches_is_found() -> None:
    tree = IfTemplate(lambda s: True, EndTemplate(template_id="x"), EndTemplate(template_id="x"))
    with pytest.raises(DefinitionError, match="duplicate template_id 'x'"):
        Runner(None, tree)


def test_break_outside_a_loop_is_rejected() -> None:
    tree = LinearTemplate([UserTemplate("hi"), IfTemplate(lambda s: True, BreakTemplate())])
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == (
        "BreakTemplate at LinearTemplate > [1] IfTemplate > [0] BreakTemplate is not inside any "
        "LoopTemplate: it can only leave an enclosing loop"
    )


def test_a_child_that_is_not_a_template_is_rejected() -> None:
    tree = LinearTemplate([SystemTemplate("s"), "oops"])  # type: ignore[list-item]
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == "LinearTemplate: child 1 is str 'oops', expected a Template"


def test_a_tree_changed_after_a_runner_was_built_is_checked_again() -> None:
    # Templates are mutable: each runner built checks the tree as it is then, so a tree
    # made wrong after a first runner accepted it is rejected, with the same messages.
    inner = LoopTemplate([UserTemplate(), BreakTemplate()], exit_loop_count=1)
    tree = LinearTemplate([SystemTemplate("s", template_id="intro"), inner])
    Runner(None, tree)
    tree.templates = (*tree.templates, BreakTemplate())
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == ("BreakTemplate at LinearTemplate > [2] BreakTemplate is not "
                               "inside any LoopTemplate: it can only leave an enclosing loop")
    tree.templates = tree.templates[:2]
    Runner(None, tree)
    inner.templates[0].template_id = "intro"
    with pytest.raises(DefinitionError) as info:
        Runner(None, tree)
    assert str(info.value) == ("duplicate template_id 'intro': at LinearTemplate > [0] "
                               "SystemTemplate(template_id='intro') and at LinearTemplate > [1] "
                               "LoopTemplate > [0] UserTemplate(template_id='intro')")


def test_an_object_that_only_claims_to_be_a_break_is_checked_as_one() -> None:
    # The quick first pass asks of classes; what merely says it is a Template (its
    # ``__class__``, as a proxy's) gets the full check, which asks as it always did.
    class Claims:
        template_id = None

        @property
        def __class__(self) -> type:
            return BreakTemplate

        def children(self) -> tuple[()]:
            return ()

        def label(self) -> str:
            return "BreakTemplate"

    with pytest.raises(DefinitionError) as info:
        Runner(None, LinearTemplate([UserTemplate("hi"), Claims()]))  # type: ignore[list-item]
    assert str(info.value) == ("BreakTemplate at LinearTemplate > [1] BreakTemplate is not "
                               "inside any LoopTemplate: it can only leave an enclosing loop")


def test_one_template_twice_in_a_tree_is_no_duplicate() -> None:
    shared = AssistantTemplate("a", template_id="same")
    Runner(None, LinearTemplate([shared, LoopTemplate([shared], exit_loop_count=1), shared]))


def test_running_something_that_is_not_a_template_is_rejected() -> None:
    with pytest.raises(DefinitionError) as info:
        Runner(None, "hello")  # type: ignore[arg-type]
    assert str(info.value) == "expected a Template to run, got str 'hello'"


def test_every_template_takes_a_template_id() -> None:
    templates: list[Template] = [
        MessageTemplate("x", "user", template_id="t1"), SystemTemplate("x", template_id="t2"),
        UserTemplate(template_id="t3"), AssistantTemplate(template_id="t4"),
        GenerateTemplate(template_id="t5"), LinearTemplate([], template_id="t6"),
        LoopTemplate([BreakTemplate(template_id="t7")], template_id="t8"),
        IfTemplate(lambda s: True, EndTemplate(template_id="t9"), template_id="t10"),
    ]
    Runner(None, LinearTemplate(templates))  # all ids distinct: accepted
    assert [t.template_id for t in templates] == ["t1", "t2", "t3", "t4", "t5", "t6", "t8", "t10"]
