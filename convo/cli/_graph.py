"""``convo graph FILE[:NAME]``: a template's state machines as a Mermaid stateDiagram."""

from __future__ import annotations

import argparse
from typing import Any

from .._botfile import UsageProblem, find_template, load_file, split_target

EXIT_OK = 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    graph = sub.add_parser("graph", parents=[common], help="print a template's states as Mermaid",
                           description="Print the state machines of the template NAME "
                                       "(default: template) as a Mermaid stateDiagram.")
    graph.add_argument("target", metavar="FILE[:NAME]")
    graph.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    from .._errors import DefinitionError
    from ..templates._graph import mermaid

    path, name = split_target(args.target)
    try:
        print(mermaid(find_template(load_file(path), path, name)), end="")
    except DefinitionError as exc:
        raise UsageProblem(f"{args.target}: {exc}") from exc
    return EXIT_OK
