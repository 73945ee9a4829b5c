"""The command line that starts a stdio MCP server: its program found first, then run through the launcher.

The MCP SDK starts the process (``mcp.client.stdio``: a new session, stdin closed then ``SIGTERM`` then
``SIGKILL`` for the group when the connection ends). It offers no hook into the child before the
server runs, so on Linux the command is wrapped in ``tools/launcher.py``, which ties the
server's process group to the agent's life (see there). The program is looked up here the way the
SDK's spawn would (the server's ``PATH``, a relative path against its working directory), so a
missing program still fails at once with "No such file or directory" rather than as a launcher
that exited.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from acp_hermes_tools.local_io import LAUNCHER


def server_command(command: str, args: Sequence[str], env: Mapping[str, str],
                   cwd: Path | None) -> tuple[str, list[str]]:
    """The program and arguments to hand the SDK for ``command args`` run with ``env`` in ``cwd``.

    Raises ``FileNotFoundError`` when the program is not there.
    """
    if not sys.platform.startswith("linux") or not sys.executable:
        return command, list(args)
    program = _find(command, env, cwd)
    return sys.executable, ["-I", "-S", str(LAUNCHER), str(os.getpid()), program, command, *args]


def _find(command: str, env: Mapping[str, str], cwd: Path | None) -> str:
    if os.sep in command:
        path = Path(command) if os.path.isabs(command) else (cwd or Path.cwd()) / command
        found = str(path) if path.is_file() else None
    else:
        found = shutil.which(command, path=os.pathsep.join(os.get_exec_path(dict(env))))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return os.path.abspath(found)
