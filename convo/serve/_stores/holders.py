"""Who holds a turn's lease, named so that another worker can tell when that process died.

A holder is this machine's boot, the process's pid namespace and its pid
(``"<boot id>/<pid namespace>/<pid>"``, Linux). A worker that sees a lease held by a process
of its own boot and pid namespace that no longer runs takes the turn over at once, instead of
waiting for the lease to lapse: ``--workers N`` on one machine, or a process manager that
restarts a killed worker there. A holder elsewhere (another machine or container), or a pid
that was reused, looks alive: its lease is then the bound. A connection to the store is no
sign of life: it can be cut while its worker goes on (that is why liveness is a lease).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


@functools.cache
def _here() -> str | None:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:  # not Linux: no holder can be told dead, the lease is the bound
        return None


def this_process() -> str | None:
    """This process, as a lease's holder (``None`` where processes cannot be told apart)."""
    here = _here()
    return None if here is None else f"{here}/{os.getpid()}"


def gone(holder: str | None) -> bool:
    """Whether ``holder`` is a process of this boot and pid namespace that no longer runs."""
    here = _here()
    if not holder or here is None:
        return False
    where, _, pid = holder.rpartition("/")
    if where != here or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, as another user
        return False
    return False
