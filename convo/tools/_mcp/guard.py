"""A stdio server's process does not outlive the process that started it (Linux).

Closing a connection stops its server (``connection.py``), and so does a clean exit; a process
killed with SIGKILL (a ``convo serve`` worker the OOM killer or an operator ended, a crash)
closes nothing, and a server that is inside a call when its stdin ends may never notice: each
such death would leave one more server running.

So on Linux a stdio server is started through a few lines of Python that ask the kernel for
SIGKILL when their parent dies (``prctl(PR_SET_PDEATHSIG)``, kept across ``exec``) and then
``exec`` the server's command: the server is the same process, with the same pid and process
group, and nothing stays resident. The MCP SDK starts the process itself (``anyio.open_process``
takes no pre-exec hook), hence a wrapper rather than a hook. Two limits, documented in
docs/mcp.md: the signal follows the death of the *thread* that started the server (convo's are
the serving loop's and the MCP background loop's, which live as long as the process), and it
reaches the server's own process, not processes the server started (those see their stdin end
when the parent dies, as before).
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Final

#: Run as ``python -I -S -c GUARD PARENT_PID COMMAND ARGS...``: nothing of convo is imported.
GUARD: Final = """\
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):  # the parent died before the prctl
    os._exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"cannot run {sys.argv[2]}: {exc.strerror}\\n")
    os._exit(127)
"""


def guarded(command: str, args: Sequence[str], env: Mapping[str, str]
            ) -> tuple[str, list[str]]:
    """The command and arguments that start ``command`` under the guard (on Linux; elsewhere
    as given). A command that cannot be found raises ``FileNotFoundError`` here, as starting
    it directly would (looked up on the server's ``PATH``)."""
    if not sys.platform.startswith("linux"):
        return command, list(args)
    found = command if os.sep in command else shutil.which(command, path=env.get("PATH"))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return sys.executable, ["-I", "-S", "-c", GUARD, str(os.getpid()), found, *args]
