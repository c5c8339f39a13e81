"""The one Jinja environment, and compiled template text.

Chat text is not HTML: no autoescaping. Undefined variables are errors (``StrictUndefined``).
Text is compiled once, when the template object is built; text without Jinja markup skips
Jinja entirely. The environment is Jinja's immutable sandbox: template text cannot reach
Python internals (``__globals__``, ``__class__``...) nor change the values it is given; what
it tries and may not do is a ``RenderError`` naming the template.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from ._errors import RenderError, TemplateSyntaxError
from ._internal import MACHINE

if TYPE_CHECKING:
    import jinja2

    from ._session import Session


@functools.cache
def environment() -> jinja2.Environment:
    """The one Jinja environment (add filters or globals to it before building templates).

    An ``ImmutableSandboxedEnvironment``, made on first use: text without Jinja markup never
    needs jinja2, which is slow to import.
    """
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from ._messages import Message

    class ConvoEnvironment(ImmutableSandboxedEnvironment):
        """A parts message's ``content`` reads as its text (images are not for templates)."""

        def getattr(self, obj: Any, attribute: str) -> Any:
            if attribute == "content" and type(obj) is Message:
                return obj.text
            return super().getattr(obj, attribute)

    return ConvoEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def __getattr__(name: str) -> Any:
    if name == "ENVIRONMENT":  # the environment under its older name
        return environment()
    raise AttributeError(f"module 'convo._rendering' has no attribute {name!r}")


_MARKUP: Final = ("{{", "{%", "{#")


@functools.cache
def jinja_errors() -> tuple[type[TemplateSyntaxError], type[RenderError]]:
    """convo's Jinja errors that are also jinja2's own, so that code written to catch
    ``jinja2.TemplateSyntaxError`` / ``jinja2.UndefinedError`` keeps catching them.

    Made on first use, like the environment: ``import convo`` never imports jinja2.
    """
    import jinja2

    class JinjaSyntaxError(TemplateSyntaxError, jinja2.TemplateSyntaxError):
        """Jinja that does not compile (a ``convo`` and a ``jinja2`` TemplateSyntaxError)."""

        def __init__(self, message: str, lineno: int) -> None:
            jinja2.TemplateSyntaxError.__init__(self, message, lineno)
            self.translated = True  # str() is the message as convo wrote it

    class UndefinedVariableError(RenderError, jinja2.UndefinedError):
        """An undefined variable (a ``convo.RenderError`` and a ``jinja2.UndefinedError``)."""

    for cls in (JinjaSyntaxError, UndefinedVariableError):
        cls.__module__, cls.__qualname__ = "convo._errors", cls.__name__
    return JinjaSyntaxError, UndefinedVariableError


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Text:
    """A piece of template text, compiled once; ``render(session)`` gives the string."""

    __slots__ = ("_compiled", "owner", "source")

    def __init__(self, source: str, owner: str, *, disable_jinja: bool = False) -> None:
        self.source = source
        self.owner = owner
        self._compiled: jinja2.Template | None = None
        if disable_jinja or not any(m in source for m in _MARKUP):
            return
        import jinja2

        try:
            self._compiled = environment().from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise jinja_errors()[0](
                f"{owner}: Jinja syntax error on line {exc.lineno}: {exc.message} "
                f"in {_short(source)!r}", exc.lineno
            ) from exc

    def render(self, session: Session) -> str:
        if self._compiled is None:
            return self.source
        variables: dict[str, Any] = dict(session.state)
        machine = session.internal.get(MACHINE)
        if machine is not None:  # the running state machine's state (docs/states.md)
            variables["_convo_state"] = machine
        variables["messages"] = session.messages
        variables["last_message"] = session.last_message
        import jinja2
        from jinja2.exceptions import SecurityError

        try:
            return self._compiled.render(variables)
        except SecurityError as exc:
            raise RenderError(
                f"{self.owner}: the template text {_short(self.source)!r} tried something the "
                f"sandbox forbids: {exc}"
            ) from exc
        except jinja2.UndefinedError as exc:
            raise jinja_errors()[1](
                f"{self.owner}: undefined variable in {_short(self.source)!r}: {exc.message}. "
                f"Defined: {', '.join(sorted(variables)) or 'nothing'} "
                "(set it in session.state)"
            ) from exc
        except Exception as exc:
            raise RenderError(
                f"{self.owner}: rendering {_short(self.source)!r} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
