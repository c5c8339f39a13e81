"""Models by name: ``resolve("openai:gpt-4o")`` builds a model from ``PREFIX:NAME``, and
``register(prefix, factory)`` adds a provider of one's own (API.md §23).

Built-in prefixes: ``openai:`` (Chat Completions), ``openai-responses:``, ``anthropic:`` and
``gemini:``; each names the module and class of its provider's room, imported only when a
model is made (so naming a provider never imports its SDK). A name without a known prefix is
an OpenAI model's name, as it always was (``llama3:8b`` on an Ollama server stays one name).
Every command that takes ``--model`` resolves it here, after loading the bot file, so a bot
file may ``register`` first.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ._base import Model

Factory = Callable[[str], Model]


@attrs.frozen
class BuiltIn:
    """A provider convo ships: where its model class is, and how the command line finds its
    key (no key and no base URL: the bot file's mock model)."""

    module: str
    cls: str
    extra: str
    keys: tuple[str, ...]
    base_url_env: str | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)

    def key(self) -> str | None:
        return next((os.environ[k] for k in self.keys if os.environ.get(k)), None)

    def base_url(self) -> str | None:
        return os.environ.get(self.base_url_env) or None if self.base_url_env else None

    def no_key(self) -> str:
        """How the command line says there is no key: ``no OPENAI_API_KEY or --base-url``."""
        return f"no {' or '.join(self.keys)} or --base-url"


BUILT_IN: Final[Mapping[str, BuiltIn]] = {
    "openai": BuiltIn("convo.models._openai", "OpenAIModel", "", ("OPENAI_API_KEY",),
                      "OPENAI_BASE_URL", {"api": "chat"}),
    "openai-responses": BuiltIn("convo.models._openai", "OpenAIModel", "", ("OPENAI_API_KEY",),
                                "OPENAI_BASE_URL", {"api": "responses"}),
    "anthropic": BuiltIn("convo.models._anthropic", "AnthropicModel", "anthropic",
                         ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL"),
    "gemini": BuiltIn("convo.models._gemini", "GeminiModel", "gemini",
                      ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
}
DEFAULT: Final = "openai"

_registered: dict[str, Factory] = {}
_PREFIX: Final = re.compile(r"[a-z][a-z0-9_.-]*")


def register(prefix: str, factory: Factory) -> None:
    """Make ``resolve("PREFIX:NAME")`` (and ``--model PREFIX:NAME``) call ``factory(NAME)``.

    Registering a prefix again replaces its factory (a bot file loaded twice); a built-in
    prefix cannot be taken.
    """
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise ValueError(f"a provider's prefix is lower-case letters, digits, '-', '_' or '.', "
                         f"starting with a letter (as in 'acme'), got {prefix!r}")
    if prefix in BUILT_IN:
        raise ValueError(f"{prefix!r} is convo's own provider prefix: register another "
                         f"(built in: {', '.join(BUILT_IN)})")
    if not callable(factory):
        raise TypeError(f"register({prefix!r}, factory): the factory must be callable "
                        f"(name) -> Model, got {type(factory).__name__}")
    _registered[prefix] = factory


def registered(prefix: str) -> bool:
    return prefix in _registered


def split(spec: str) -> tuple[str | None, str]:
    """``"anthropic:claude"`` → ``("anthropic", "claude")``; a name whose prefix is not a
    provider's → ``(None, name)``, an OpenAI model's name."""
    prefix, sep, name = spec.partition(":")
    if sep and (prefix in BUILT_IN or prefix in _registered):
        return prefix, name
    return None, spec


def resolve(spec: str, **options: Any) -> Model:
    """The model ``PREFIX:NAME`` names. ``options`` go to a built-in provider's class
    (``base_url=``, ``stream=``, ...); a registered factory gets the name only."""
    prefix, name = split(spec)
    factory = _registered.get(prefix) if prefix is not None else None
    if factory is not None:
        if options:
            raise TypeError(f"{prefix}: is a registered provider: its factory takes the "
                            f"model's name only, not {', '.join(sorted(options))}")
        made = factory(name)
        if not callable(getattr(made, "complete", None)):
            raise TypeError(f"the factory registered for {prefix!r} returned a "
                            f"{type(made).__name__}, not a model (complete/acomplete)")
        return made
    built = BUILT_IN[prefix or DEFAULT]
    cls = model_class(prefix or DEFAULT)
    kw = {**built.options, **options}
    if name:
        kw["model"] = name
    model: Model = cls(**kw)
    return model


def model_class(prefix: str) -> Any:
    """The class of a built-in provider; an ``ImportError`` that says what to install when
    its SDK is missing, or that the provider is not in this version of convo."""
    built = BUILT_IN[prefix]
    try:  # the room may load its class (and its SDK) lazily: getattr imports too
        return getattr(importlib.import_module(built.module), built.cls)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == built.module
                                     or built.module.startswith(exc.name + ".")):
            raise ImportError(
                f"the {prefix}: provider is not in this version of convo yet "
                f"({built.module}.{built.cls}): use openai: or openai-responses:, or "
                "register a provider of your own with convo.models.register") from exc
        # Both wordings: API.md §23's by-name install, qualified, and the checkout's.
        raise ImportError(
            f"the {prefix}: provider needs the {exc.name} package, in the {built.extra} extra: "
            f'pip install -e ".[{built.extra}]" in convo\'s checkout, or '
            f'pip install "convo[{built.extra}]" from an index that serves this convo '
            '(the "convo" on the public package index is another project)') from exc
