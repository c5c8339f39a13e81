"""What served conversations refuse, and why, in the engine's words: no HTTP here. The app
(``convo.serve._http.app``) answers each kind with its status: ``NotFound`` 404, ``Conflict`` 409,
``Invalid`` 400, ``Forbidden`` 403, ``Unsupported`` 501."""

from __future__ import annotations

from typing import Final

#: How to get the serve extra, for the errors that need it (``convo.serve.INSTALL_SERVE``).
#: convo installs from its checkout: the ``convo`` on the package index is another project.
INSTALL_SERVE: Final = ('install the serve extra: pip install -e ".[serve]" in convo\'s '
                        'checkout (the "convo" on the package index is another project)')


#: Why ``/mcp`` answers 501, or ``faces=["mcp"]`` is refused, without the mcp extra.
MCP_MISSING: Final = ('the MCP face (/mcp) needs the mcp package, which is not installed: '
                      'pip install -e ".[mcp]" in convo\'s checkout, or '
                      'pip install "convo[mcp]" from an index that serves this convo')


class Refused(Exception):
    """A request the served conversations refuse; the message says why and what to do."""


class NotFound(Refused):
    """No such conversation (never made, or deleted)."""


class Conflict(Refused):
    """Not now: a turn runs, the conversation ended, or it waits for something else."""


class Busy(Conflict):
    """A turn runs in the conversation (API.md §9's 409; §26: unless the message says what to
    do ``while_busy``)."""


class Full(Refused):
    """The conversation's queue holds ``max_queued`` messages already (API.md §26: 429)."""


class Invalid(Refused):
    """What was sent cannot be taken (the message says what was expected)."""


class Forbidden(Refused):
    """Not for this caller: it waits for an operator (a staff approval, a handoff)."""


class Unsupported(Refused):
    """Not on this server: its store lacks an optional capability the request needs."""


#: The HTTP status of each kind of refusal (the app answers with it).
STATUS: dict[type[Refused], int] = {NotFound: 404, Conflict: 409, Invalid: 400, Forbidden: 403,
                                    Full: 429, Unsupported: 501}


def status_of(exc: Exception) -> int:
    """The HTTP status of a refusal: the engine's kind of ``Refused``, or the ``status`` an
    HTTP layer's own problem carries (``http/bodies.py``'s ``HTTPProblem``); else 500."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status
    return next((status for kind, status in STATUS.items() if isinstance(exc, kind)), 500)


class NotFollowed(Invalid):
    """A client's history the template cannot have produced (API.md §25): ``at`` is the
    index (in the history given) of the first message it does not follow, ``wants`` what
    the template waits for there."""

    def __init__(self, at: int, wants: str) -> None:
        super().__init__(f"message {at} is not what the bot waits for there: it waits for "
                         f"{wants}")
        self.at = at
        self.wants = wants
