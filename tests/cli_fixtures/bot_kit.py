"""What several bot files of this folder share (a bot file may import its neighbours):
``wait_until_interrupted``, the body of the ``wait`` tools that wait for Ctrl-C."""

import threading


def wait_until_interrupted() -> str:
    """Says the tool is waiting, then waits for something that never comes (a Ctrl-C ends
    it)."""
    print("(the tool is waiting)", flush=True)
    threading.Event().wait()
    return "never"
