"""Starts one program (on Linux) so that nothing of it outlives the agent, even ``kill -9`` of it: a
stdio MCP server, or a background command.

Run as a script, by path, with Python's standard library only (``python -I -S launcher.py``: no site,
no package of ours to import)::

    launcher.py <agent pid> <executable> <argv0> [arguments...]

It is started in a new session (its own process group, whose id is this pid) from the agent's
event-loop thread: by the MCP SDK for a server, by ``tools.local_io`` for a background command. It
asks the kernel for ``SIGHUP`` when that thread ends (``PR_SET_PDEATHSIG``: the signal follows the
thread that forked, and the loop's thread lives as long as what it started), then forks the program,
which asks for ``SIGKILL`` when this launcher ends. On ``SIGHUP`` the launcher kills its whole process
group with ``SIGKILL``: the program and everything it started that stayed in the group (``npx`` →
``node``, a shell → its commands, bubblewrap → the sandbox it holds). The agent's death cannot go
unnoticed either way: a launcher that finds its parent already gone before it asked for the signal
exits at once.

Otherwise it stays out of the way: the program gets exactly the environment the launcher was started
with (not Python's own, which adds ``LC_CTYPE`` where the locale is C: a sandboxed command's bubblewrap
must start with the allowlisted variables alone) and the descriptors it was passed; it waits for the
program and ends the way it ended — its exit
code, or the same signal (so whoever waits for the launcher sees what it would have seen of the
program); it ignores ``SIGTERM`` and ``SIGINT`` so that a stop sent to the group (stdin closed, then
``SIGTERM``, then ``SIGKILL``) reaches the program as it would without it. The program gets the
default handling of those signals back, and of ``SIGPIPE`` and ``SIGXFSZ``, which Python ignores (as
``subprocess`` does when it starts a program).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
NOT_STARTED = 127  # the shell's status for a command that could not be run
# What this launcher changed, and what Python ignores from its start (SIGPIPE, SIGXFSZ): an ignored
# signal stays ignored across exec, so the program gets each back as a spawn from Python would give it.
RESTORED = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)


def main(argv: list[str]) -> int:
    agent, executable, program_argv = int(argv[1]), argv[2], argv[3:]
    signal.signal(signal.SIGHUP, _kill_group)
    for ignored in (signal.SIGTERM, signal.SIGINT):
        signal.signal(ignored, signal.SIG_IGN)
    _die_with_parent(signal.SIGHUP)
    if os.getppid() != agent:  # the agent ended before the kernel was asked to tell us
        return 1
    launcher = os.getpid()
    program = os.fork()
    if program == 0:
        _become_program(launcher, executable, program_argv)
    _let_go_of_pipes()
    while True:
        try:
            _, status = os.waitpid(program, 0)
        except ChildProcessError:
            return 1
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            return _end_as(status)


def _become_program(launcher: int, executable: str, program_argv: list[str]) -> None:
    """In the child: default signal handling, death with the launcher, then the program itself."""
    try:
        for restored in RESTORED:
            signal.signal(restored, signal.SIG_DFL)
        _die_with_parent(signal.SIGKILL)
        if os.getppid() != launcher:
            os._exit(1)
        os.execve(executable, program_argv, _given_environment())
    except OSError as error:
        sys.stderr.write(f"acp-hermes: could not start {executable}: {error.strerror}\n")
    finally:
        os._exit(NOT_STARTED)


def _given_environment() -> dict[bytes, bytes] | os._Environ[str]:
    """The environment this process was started with, as it was: the kernel keeps it in
    ``/proc/self/environ`` (inherited through the fork), whatever Python set at its start-up."""
    try:
        with open("/proc/self/environ", "rb") as given:
            block = given.read()
    except OSError:
        return os.environ
    return dict(item.split(b"=", 1) for item in block.split(b"\0") if b"=" in item)


def _end_as(status: int) -> int:
    """The program's exit code; or, when a signal ended it, the same signal raised here (no core dump:
    that was the program's to write). 128 + the signal's number if it does not end a process."""
    if not os.WIFSIGNALED(status):
        return os.WEXITSTATUS(status)
    signum = os.WTERMSIG(status)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if signum not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


def _die_with_parent(signum: int) -> None:
    """Ask the kernel to send ``signum`` when the thread that started this process ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        sys.stderr.write(f"acp-hermes: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}\n")


def _let_go_of_pipes() -> None:
    """Hold no end of the program's stdin and stdout: the agent must see them close with the program alone."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _kill_group(signum: int, frame: object) -> None:
    """The agent is gone: end the program's whole process group, this launcher with it."""
    if os.getpgid(0) == os.getpid():  # the group is ours alone (we were started in a new session)
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(128 + signal.SIGHUP)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
