"""Starts one stdio MCP server (on Linux) so that nothing of it outlives the agent, even ``kill -9`` of it.

Run as a script, by path, with Python's standard library only (``python -I -S launcher.py``: no site,
no package of ours to import)::

    launcher.py <agent pid> <executable> <argv0> [arguments...]

The MCP SDK starts this in a new session (its own process group, whose id is this pid) from the
agent's event-loop thread. It asks the kernel for ``SIGHUP`` when that thread ends
(``PR_SET_PDEATHSIG``: the signal follows the thread that forked, and the loop's thread lives as
long as the servers it owns), then forks the server, which asks for ``SIGKILL`` when this launcher
ends. On ``SIGHUP`` the launcher kills its whole process group with ``SIGKILL``: the server and
everything it started that stayed in the group (``npx`` → ``node``, a shell → its commands). The
agent's death cannot go unnoticed either way: a launcher that finds its parent already gone before
it asked for the signal exits at once.

Otherwise it stays out of the way: it waits for the server and exits with its status (``128 + n``
when signal ``n`` ended it); it ignores ``SIGTERM`` and ``SIGINT`` so that the SDK's shutdown
(stdin closed, then ``SIGTERM`` to the group, then ``SIGKILL``) reaches the server as it would without
it. The server gets the default handling of those signals back, and of ``SIGPIPE`` and ``SIGXFSZ``,
which Python ignores (as ``subprocess`` does when it starts a program).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
NOT_STARTED = 127  # the shell's status for a command that could not be run
# What this launcher changed, and what Python ignores from its start (SIGPIPE, SIGXFSZ): an ignored
# signal stays ignored across exec, so the server gets each back as a spawn from Python would give it.
RESTORED = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)


def main(argv: list[str]) -> int:
    agent, executable, server_argv = int(argv[1]), argv[2], argv[3:]
    signal.signal(signal.SIGHUP, _kill_group)
    for ignored in (signal.SIGTERM, signal.SIGINT):
        signal.signal(ignored, signal.SIG_IGN)
    _die_with_parent(signal.SIGHUP)
    if os.getppid() != agent:  # the agent ended before the kernel was asked to tell us
        return 1
    launcher = os.getpid()
    server = os.fork()
    if server == 0:
        _become_server(launcher, executable, server_argv)
    _let_go_of_pipes()
    while True:
        try:
            _, status = os.waitpid(server, 0)
        except ChildProcessError:
            return 1
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def _become_server(launcher: int, executable: str, server_argv: list[str]) -> None:
    """In the child: default signal handling, death with the launcher, then the server itself."""
    try:
        for restored in RESTORED:
            signal.signal(restored, signal.SIG_DFL)
        _die_with_parent(signal.SIGKILL)
        if os.getppid() != launcher:
            os._exit(1)
        os.execv(executable, server_argv)
    except OSError as error:
        sys.stderr.write(f"acp-hermes: could not start the MCP server {executable}: {error.strerror}\n")
    finally:
        os._exit(NOT_STARTED)


def _die_with_parent(signum: int) -> None:
    """Ask the kernel to send ``signum`` when the thread that started this process ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        sys.stderr.write(f"acp-hermes: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}\n")


def _let_go_of_pipes() -> None:
    """Hold no end of the server's stdin and stdout: the agent must see them close with the server alone."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _kill_group(signum: int, frame: object) -> None:
    """The agent is gone: end the server's whole process group, this launcher with it."""
    if os.getpgid(0) == os.getpid():  # the group is ours alone (the SDK starts us in a new session)
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(128 + signal.SIGHUP)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
