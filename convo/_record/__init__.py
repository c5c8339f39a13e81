"""Recording a conversation as it happens: one recorder, several destinations.

``Recorder`` (recorder.py) is an ``on_event`` handler that turns a run's events into records,
the lines of the transcript format (``convo._record.transcript``), and hands each to a sink: a
transcript file (``TranscriptWriter``), the terminal's chat history
(``convo._terminal.history``), a served conversation's store (``convo.serve._live``). Every
destination is read back into the same ``Session`` (``records_session``), which
``Runner.resume`` replays: messages, state, turns, approvals, subroutines and the outcome.
"""
