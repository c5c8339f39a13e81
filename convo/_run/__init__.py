"""The running core: one driver, the run's state, the answerers, and replay.

- ``state.py``    ``RunState``: one run's counters, limits and outcome.
- ``driver.py``   ``Driver``: the one pump (``step(answer) -> next request``), and the two loops
                  that feed it answers (blocking and async) for every front end.
- ``stack.py``    ``Answerer``: one method per kind of request and the one dispatch;
                  ``Forwarding``, the base of an answerer in front of another; ``stack()``.
- ``answerer.py`` ``LiveAnswerer``: the model, tools, the user and approvals, answered live,
                  written once; ``Pause``.
- ``guarding.py`` Answering ``CheckGuards`` live: in the pump for plain-function guards, in the
                  live answerer for the rest (a judge, an async check).
- ``cancel.py``   ``Cancellable``: the one cancel (a cut-off model call, a stopped tool), which
                  the terminal and serving put in front of the live answerer.
- ``replay.py``   ``Replay``: an answerer in front of another that answers from a saved
                  conversation (resume, a served rebuild), subroutines included; the driver
                  is given it and shows it each step while it replays.

Private: the public faces are ``convo`` (``Runner``) and ``convo.templates`` (for authors of
templates). See docs/architecture.md.
"""
