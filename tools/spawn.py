"""How this process starts a program itself: what a sandbox hands the spawn besides the command line."""

from __future__ import annotations

from collections.abc import Mapping

from acp_hermes_memory.values import value


@value
class Launch:
    """A program to spawn: ``env`` is its whole environment (None: this process's own), ``pass_fds`` what it
    inherits beyond 0-2 (a sandbox's filter, which bubblewrap reads and closes before the command runs)."""

    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None
    pass_fds: tuple[int, ...] = ()
