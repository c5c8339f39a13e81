"""Conversations on Temporal (``convo[temporal]``): one workflow per conversation, convo's own
driver pumping the template inside it, every side effect an activity.

- ``workflow``: ``ConvoConversation``: the driver in the workflow, a person's inputs as
  Updates (``message``, ``approve``, ``operator_message``, ``handback``, ``retry``), the
  conversation as a Query; it continues as new every ``continue_every`` turns.
- ``activities``: the store (create, load, write) and the model calls, tool calls and hooks,
  each answered by rebuilding the conversation from the store to the request the workflow is
  at (the transcript goes by reference: conversation id, never the messages themselves).
- ``bots``: what a worker runs (the bot's runner, its store, the options), found by the
  workflow through its task queue.
- ``worker``: the Temporal worker of a bot (``convo worker``).
- ``checks``: the bot's guards whose check is ``async`` (it may do I/O), each run as an
  activity named by its place among them.
- ``sandbox``: how a bot file's workflows run in Temporal's default workflow sandbox (what is
  passed through, and the finder through which the sandbox imports the bot file).
- ``wire``: what crosses between them, as JSON.
- ``deltas``: a streamed reply's text, from the model activity to the HTTP front, through
  the store (Temporal streams nothing).
- ``engine``: the HTTP front's engine (``convo serve --engine temporal://…``): each turn an
  Update, the answer read from the store.

Nothing here is imported by ``import convo``: only ``convo worker`` and the test kit's
``temporal_server`` users import it.
"""
