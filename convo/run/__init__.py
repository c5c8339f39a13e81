"""The running core: one driver, the run's state, the answerers, and replay.

- ``state.py``    ``RunState``: one run's counters, limits and outcome.
- ``driver.py``   ``Driver``: the one pump (``step(answer) -> next request``), and the two loops
                  that feed it answers (blocking and async) for every front end.
- ``answerer.py`` the answerer protocols and ``LiveAnswerer``: the model, tools, the user and
                  approvals, answered live, written once.
- ``replay.py``   ``Replay``: an answerer in front of another that answers from a saved
                  conversation (resume, a served rebuild), subroutines included.

Private: the public faces are ``convo`` (``Runner``) and ``convo.templates`` (for authors of
templates). See docs/architecture.md.
"""
