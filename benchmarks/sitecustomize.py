"""For the serving benchmark's processes (on ``PYTHONPATH`` through ``serve_parts.py``): with
``CONVO_BENCH_STACKS=DIR`` set, SIGUSR1 makes a process append to ``DIR/stacks-PID.txt`` the
stack of every thread and of every asyncio task of every event loop in it, so that a stalled
turn shows what each side awaits (a thread dump alone shows only a loop idle in ``select``).
Python imports this file at startup in each process whose path holds this folder.
"""

from __future__ import annotations

import os

_DIR = os.environ.get("CONVO_BENCH_STACKS")


def _dump(signum: int, frame: object) -> None:
    import asyncio
    import faulthandler
    import gc
    import time

    assert _DIR is not None
    with open(os.path.join(_DIR, f"stacks-{os.getpid()}.txt"), "a") as out:
        out.write(f"== pid {os.getpid()} at {time.time():.3f}: threads\n")
        out.flush()
        faulthandler.dump_traceback(out, all_threads=True)
        loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]
        for loop in loops:
            if loop.is_closed():
                continue
            try:
                tasks = list(asyncio.all_tasks(loop))
            except RuntimeError:  # the set changed under us (another thread): try again
                tasks = list(asyncio.all_tasks(loop))
            out.write(f"== loop {loop!r}: {len(tasks)} tasks\n")
            for task in tasks:
                out.write(f"-- {task!r}\n")
                task.print_stack(file=out)


if _DIR:
    import signal

    signal.signal(signal.SIGUSR1, _dump)
