"""One-use launch scripts, so that an editor titles a terminal with the user's command.

Editors name the terminal they open for ``terminal/create`` after its ``command`` and ``args``
(Toad's border title, Zed's command header, acpx's log line and its permission prompt), and run
exactly those. A sandboxed command line starts with the sandbox: bubblewrap or sandbox-exec with
every mount and variable, behind the seccomp launcher; that is what the title would show, with the
user's command at its far end. So the terminal runs ``/bin/sh <script> <command line>`` instead:
the script execs the sandboxed command line, and the user's command line after it is only shown
(the script never reads its arguments). No editor can show the command alone and still run the
sandbox: each shows exactly the program and arguments it runs.

The shown command line stays inert in any editor: some join ``args`` into a shell line without
quoting them (Zed did, before it quoted arguments), so a command line with anything but plain
words is shown quoted (``shown``); the words of a plain one can only ever be arguments.

The scripts live in the agent's own home, which no sandboxed command can see or write, so none can
change what the editor runs next outside the sandbox; each is removed once its command has ended.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path

from acp_hermes_memory.fs import private_directory

# Reads the script, so the script needs no execute permission (a home mounted noexec), and its path
# is an argument: Toad and Zed put `command` into their shell line as it is, and quote arguments.
SHELL = "/bin/sh"
_PLAIN = re.compile(r"[\w@%+=:,./ -]*", re.ASCII)  # shlex's characters that need no quoting, and blanks


def shown(command: str) -> str:
    """``command`` as the terminal's title shows it: as written when it is plain words, else quoted."""
    return command if _PLAIN.fullmatch(command) else shlex.quote(command)


class LaunchScripts:
    """Scripts in one private folder, each running one command line."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def write(self, argv: Sequence[str], *, sandboxed: bool) -> Path:
        """A new script (0600, in a 0700 folder) that execs ``argv``; blocking: call it off the event loop.
        Its name says whether the command runs in the sandbox, as part of the terminal's title."""
        private_directory(self.directory)
        descriptor, name = tempfile.mkstemp(prefix="sandboxed-" if sandboxed else "run-", dir=self.directory)
        # surrogateescape: a path that is not UTF-8 (a protected folder's, say) is written back byte for byte
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(f"exec {shlex.join(argv)}\n")
        return Path(name)

    @staticmethod
    def remove(script: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            script.unlink()
