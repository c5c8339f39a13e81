"""Hypothesis strategies for random template trees (``st.recursive``): every loop bounded,
``BreakTemplate`` only inside loops, conditions with readable names."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from hypothesis import strategies as st

from ..._session import Session
from ...templates import (
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
from ._values import texts


@attrs.frozen
class Condition:
    """A named, deterministic condition on a session (readable in hypothesis' output)."""

    name: str
    fn: Callable[[Session], bool] = attrs.field(repr=False)

    def __call__(self, session: Session) -> bool:
        return self.fn(session)


def _at_least(n: int) -> Condition:
    return Condition(f"len(messages) >= {n}", lambda s: len(s.messages) >= n)


_CONDITIONS = st.one_of(
    st.integers(0, 12).map(_at_least),
    st.just(Condition("always", lambda s: True)),
    st.just(Condition("never", lambda s: False)),
    st.just(Condition("even number of messages", lambda s: len(s.messages) % 2 == 0)),
    st.just(Condition("last message from assistant",
                      lambda s: s.last_message is not None
                      and s.last_message.role == "assistant")),
)


def _leaves() -> st.SearchStrategy[Template]:
    content = texts(min_size=1, max_size=20)
    return st.one_of(
        st.builds(SystemTemplate, content),
        st.builds(MessageTemplate, content, st.sampled_from(["user", "assistant", "system"])),
        st.builds(UserTemplate, content),
        st.builds(UserTemplate, description=st.none() | content, default=st.none() | content),
        st.builds(AssistantTemplate, content),
        st.builds(AssistantTemplate),
        st.builds(GenerateTemplate),
        st.builds(EndTemplate, st.none() | content),
    )


def _loop(children: st.SearchStrategy[Template]) -> st.SearchStrategy[Template]:
    body = st.lists(
        children
        | st.just(BreakTemplate())
        | st.builds(IfTemplate, _CONDITIONS, st.just(BreakTemplate())),
        min_size=1, max_size=3,
    )
    counted = st.builds(
        LoopTemplate, body, exit_loop_count=st.integers(0, 3),
        exit_condition=st.none() | _CONDITIONS,
    )
    # Bounded by its condition alone: the body adds a message every pass.
    conditioned = st.builds(
        lambda first, rest, n: LoopTemplate([first, *rest], exit_condition=_at_least(n)),
        st.builds(MessageTemplate, texts(min_size=1, max_size=10), st.just("user")),
        body, st.integers(0, 15),
    )
    return counted | conditioned


def template_trees(
    *, extra_leaves: st.SearchStrategy[Template] | None = None, max_leaves: int = 10,
) -> st.SearchStrategy[Template]:
    """Random template trees (``st.recursive``): every loop bounded, breaks only in loops."""
    leaves = _leaves() if extra_leaves is None else _leaves() | extra_leaves
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.builds(LinearTemplate, st.lists(children, max_size=4)),
            _loop(children),
            st.builds(IfTemplate, _CONDITIONS, children, st.none() | children),
        ),
        max_leaves=max_leaves,
    )
