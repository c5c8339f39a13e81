"""A bot file: a Python file that defines a conversation for the ``convo`` command.

It defines ``template`` (or another template named on the command line), and may define
``mock_model`` (the model offline), ``state`` (the session's starting state), ``limits`` (a
``Limits`` or a dict), ``context`` (a ``ContextWindow`` bounding what every model call is sent),
``guards`` (``Guard``/``ModelGuard`` values for every turn, API.md §27) and ``demo_input``
(scripted user input for ``--demo``); ``title`` and ``description`` name it and say what it
does, for its pages and for the programs that call it (``convo mcp``). Loading one and
choosing its model is shared by ``convo run``, ``convo serve`` and the other commands.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

_MODULE_NAME = "__convo_file__"
MODEL_HELP = ("the model: NAME (OpenAI's; default: gpt-4o-mini) or PREFIX:NAME (openai:, "
              "openai-responses:, anthropic:, gemini:, or a prefix the bot file registers); "
              "smoke: an offline stand-in that calls the tools it is given, no key needed")


class UsageProblem(Exception):
    """A mistake by the person running the command: reported in one line, exit code 2."""


def split_target(target: str) -> tuple[str, str]:
    """``"file.py:name"`` → ``("file.py", "name")``; the name defaults to ``template``."""
    path, sep, name = target.rpartition(":")
    if sep and name.isidentifier() and path:
        return path, name
    return target, "template"


def load_file(path: str) -> ModuleType:
    """Import a Python file as a module; any failure becomes a one-line ``UsageProblem``."""
    file = Path(path)
    if not file.is_file():
        where = "is a directory" if file.is_dir() else "does not exist"
        raise UsageProblem(f"{path} {where}: give a Python file that defines a template")
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, file)
    if spec is None or spec.loader is None:
        raise UsageProblem(f"{path} cannot be imported as Python (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module
    sys.path.insert(0, str(file.resolve().parent))  # the file may import its neighbours
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UsageProblem(f"{path}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}") from exc
    except (Exception, SystemExit) as exc:
        line = _line_in(exc, file)
        at = f", line {line}" if line else ""
        raise UsageProblem(f"{path}{at} raised {type(exc).__name__}: {exc} while loading "
                           "(--debug shows the traceback)") from exc
    return module


def _line_in(exc: BaseException, file: Path) -> int | None:
    """The last line of ``file`` in the exception's traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file.resolve():
            line = frame.lineno
    return line


def find_template(module: ModuleType, path: str, name: str) -> Any:
    from .templates._base import Template

    templates = sorted(k for k, v in vars(module).items() if isinstance(v, Template))
    if not hasattr(module, name):
        if templates:
            defined = "it defines " + ", ".join(templates)
            hint = f"; run one with {path}:{templates[0]}"
        else:
            defined, hint = "it defines no templates at all", ""
        raise UsageProblem(f"{path} has no template named {name!r}: {defined}{hint}")
    obj = getattr(module, name)
    if not isinstance(obj, Template):
        others = f" (templates in it: {', '.join(templates)})" if templates else ""
        raise UsageProblem(f"{path}:{name} is a {type(obj).__name__}, not a convo Template"
                           f"{others}")
    return obj


#: ``--model smoke``: convo's offline stand-in for a real model (``smoke_model``).
SMOKE = "smoke"


def smoke_model(args: argparse.Namespace) -> tuple[Any, str]:
    """``--model smoke``: the real ``OpenAIModel`` (Chat Completions, or ``--api responses``
    with ``--reasoning``), talking to a fake OpenAI server started in this process whose
    replies are ``SmokeModel``'s: it calls every tool it is offered (MCP tools too) once per
    turn, then sums up what they gave; usage is counted. No key, no network. (One place, to
    become a provider of ``convo.models.resolve`` later.)"""
    if getattr(args, "base_url", None):
        raise UsageProblem("--model smoke is convo's offline stand-in, served in this process: "
                           "it takes no --base-url")
    from .models._openai import OpenAIModel
    from .testing import OpenAIServer, SmokeModel

    server = OpenAIServer(handler=SmokeModel().handle, keep_requests=False)
    model = OpenAIModel(model=SMOKE, base_url=server.base_url, api_key=SMOKE,
                        stream=not getattr(args, "no_stream", False), **model_options(args))
    model.smoke_server = server  # type: ignore[attr-defined]  # lives as long as the model
    api = " (Responses API)" if model.api == "responses" else ""
    return model, (f"--model smoke: an offline stand-in that calls the tools it is given, "
                   f"served to the OpenAI client at {server.base_url}{api}")


def choose_model(args: argparse.Namespace, module: ModuleType, path: str
                 ) -> tuple[Any, str | None]:
    """The model to run on, and a few words saying which it is (None: said already).

    ``--model PREFIX:NAME`` names a provider (``convo.models.resolve``), after the bot file was
    loaded: a prefix the file registered is built as it says (``--mock`` aside); a built-in
    provider without its key and without a base URL leaves the file's ``mock_model``.
    """
    from .models._providers import BUILT_IN, DEFAULT, registered, split

    spec = getattr(args, "model", None) or ""
    if spec == SMOKE and not args.mock:
        return smoke_model(args)
    prefix, _ = split(spec)
    if prefix is not None and registered(prefix) and not args.mock:
        return provider_model(args, spec)
    built = BUILT_IN[prefix or DEFAULT]
    base_url = args.base_url or built.base_url()
    if args.mock or not (built.key() or base_url):
        mock = getattr(module, "mock_model", None)
        why = "--mock" if args.mock else built.no_key()
        if mock is None:
            keys = " or ".join(built.keys)
            raise UsageProblem(
                f"{why}, and {path} defines no mock_model to run offline: set {keys}, "
                f"pass --base-url URL, or define mock_model = MockModel([...]) in {path}"
            )
        if not callable(getattr(mock, "complete", None)):
            raise UsageProblem(f"{path}: mock_model is a {type(mock).__name__}, not a model "
                               "(MockModel, FunctionModel, ...)")
        info(f"{why}: running offline on {path}'s mock_model")
        return mock, None
    if prefix is None or prefix in ("openai", "openai-responses"):
        return openai_model(args, base_url)
    return provider_model(args, spec, base_url=base_url)


def provider_model(args: argparse.Namespace, spec: str, *, base_url: str | None = None
                   ) -> tuple[Any, str]:
    """The model ``--model PREFIX:NAME`` names, for a provider other than OpenAI."""
    from .models._providers import registered, resolve, split

    prefix, name = split(spec)
    options: dict[str, Any] = {}
    if prefix is not None and not registered(prefix):  # a built-in: the common settings
        options = {"stream": not getattr(args, "no_stream", False)}
        for flag in ("max_tokens", "temperature", "timeout"):
            if getattr(args, flag, None) is not None:
                options[flag] = getattr(args, flag)
        if base_url:
            options["base_url"] = base_url
    try:
        model = resolve(spec, **options)
    except (ImportError, ValueError, TypeError) as exc:
        raise UsageProblem(f"--model {spec}: {exc}") from exc
    return model, f"model {name} from the {prefix}: provider"


def openai_model(args: argparse.Namespace, base_url: str | None) -> tuple[Any, str]:
    """The ``OpenAIModel`` the command line asks for, and a few words saying which it is."""
    from .models._openai import OpenAIModel
    from .models._providers import split

    prefix, name = split(getattr(args, "model", None) or "")
    if prefix == "openai-responses":  # the prefix says it as --api responses does
        args = argparse.Namespace(**{**vars(args), "api": "responses"})
    kw: dict[str, Any] = {"stream": not args.no_stream, **model_options(args)}
    if name:
        kw["model"] = name
    if base_url:
        kw["base_url"] = base_url
    model = OpenAIModel(**kw)
    api = " (Responses API)" if model.api == "responses" else ""
    return model, f"model {model.model} at {base_url or 'api.openai.com'}{api}"


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The OpenAIModel settings users of local models reach for (``run``, ``serve``, ``chat``)."""
    parser.add_argument("--tool-format", choices=("native", "text"), default="native",
                        help="native: the server's tool calling; text: tools described in the "
                             "prompt, for models and servers without it (default: native)")
    parser.add_argument("--tool-choice", metavar="CHOICE",
                        help="auto (default), none, required, unset (not sent), or the name of "
                             "a tool the model must call")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="cap each reply at N tokens")
    parser.add_argument("--temperature", type=float, metavar="T", help="sampling temperature")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="give up on a model call after SECONDS")
    parser.add_argument("--api", choices=("chat", "responses"), default="chat",
                        help="chat: Chat Completions; responses: the Responses API, for "
                             "reasoning models (default: chat)")
    parser.add_argument("--reasoning", metavar="EFFORT",
                        help="with --api responses: the reasoning effort (minimal, low, "
                             "medium, high), with reasoning summaries streamed")


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """``OpenAIModel`` keyword arguments from ``add_model_options``'s flags (absent: none)."""
    kw: dict[str, Any] = {}
    for flag in ("tool_format", "max_tokens", "temperature", "timeout"):
        value = getattr(args, flag, None)
        if value is not None:
            kw[flag] = value
    if getattr(args, "api", "chat") == "responses":
        kw["api"] = "responses"
    effort = getattr(args, "reasoning", None)
    if effort:
        if kw.get("api") != "responses":
            raise UsageProblem(f"--reasoning {effort}: reasoning settings are sent on the "
                               "Responses API only: add --api responses")
        kw["reasoning"] = {"effort": effort, "summary": "auto"}
    choice = getattr(args, "tool_choice", None)
    if choice == "unset":
        kw["tool_choice"] = None
    elif choice in ("auto", "none", "required"):
        kw["tool_choice"] = choice
    elif choice:
        kw["tool_choice"] = {"type": "function", "function": {"name": choice}}
    return kw


def info(text: str) -> None:
    print(f"convo: {text}", file=sys.stderr, flush=True)


def bot_limits(module: ModuleType, path: str) -> Any:
    """The file's ``limits`` (a ``Limits`` or a dict of its fields), or None."""
    from ._errors import DefinitionError
    from ._limits import Limits

    try:
        return Limits.from_mapping(getattr(module, "limits", None), f"{path}: limits")
    except DefinitionError as exc:
        raise UsageProblem(str(exc)) from exc


def bot_context(module: ModuleType, path: str) -> Any:
    """The file's ``context`` (a ``ContextWindow`` for every model call), or None."""
    from ._context import ContextWindow

    window = getattr(module, "context", None)
    if window is not None and not isinstance(window, ContextWindow):
        raise UsageProblem(f"{path}: context must be a ContextWindow (context = "
                           f"ContextWindow(max_tokens=...)), got {type(window).__name__}")
    return window


def bot_guards(module: ModuleType, path: str) -> tuple[Any, ...]:
    """The file's ``guards`` (a list of ``Guard``/``ModelGuard``), or ``()``."""
    from .guards._base import check_names

    guards = getattr(module, "guards", None)
    if guards is None:
        return ()
    if not isinstance(guards, list | tuple):
        raise UsageProblem(f"{path}: guards must be a list of Guard or ModelGuard values "
                           f"(guards = [pii()]), got {type(guards).__name__}")
    try:
        return check_names(guards, f"{path}: guards")
    except (TypeError, ValueError) as exc:
        raise UsageProblem(str(exc)) from None


def bot_bounds(module: ModuleType, path: str) -> dict[str, Any]:
    """The file's ``limits``, ``context`` and ``guards``, as the keyword arguments of a
    ``Runner`` (and of ``create_app``)."""
    return {"limits": bot_limits(module, path), "context": bot_context(module, path),
            "guards": bot_guards(module, path)}


def bot_identity(module: ModuleType, path: str) -> tuple[str, str | None]:
    """The bot's name (the file's ``title``, else the file's stem) and what it says of itself
    (the file's ``description``, else its docstring; ``None`` when it says nothing): how the
    programs that call it see it (API.md §25)."""
    found = bot_page(module, path)
    name = found.get("title") or Path(path).stem
    description = getattr(module, "description", None)
    if description is not None and (not isinstance(description, str)
                                    or not description.strip()):
        raise UsageProblem(f"{path}: description must be a non-empty string (description = "
                           f'"..."), got {description!r}')
    said = description or module.__doc__ or ""
    return name, said.strip() or None


def bot_page(module: ModuleType, path: str) -> dict[str, Any]:
    """The file's ``title`` and ``first_prompt`` (strings shown by the served chat page), as
    the keyword arguments of ``create_app``; a name the file leaves out is left out."""
    found: dict[str, Any] = {}
    for name in ("title", "first_prompt"):
        value = getattr(module, name, None)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise UsageProblem(f"{path}: {name} must be a non-empty string ({name} = "
                               f'"..."), got {value!r}')
        found[name] = value.strip()
    return found
