"""Ending a command's process group together with what it started that left the group.

A signal to a command's process group misses every process that moved to a session of its own
(``setsid``): a daemon, and bubblewrap's sandbox init, which holds everything sandboxed. bubblewrap
ties that init to its outer process with ``PR_SET_PDEATHSIG`` — but only once the init has run that
far: an outer process killed while it is still starting (a cancel just after the command began, under
load) leaves the whole sandbox running, with nobody left to end it.

So before a group is signalled it is *held*: stopped (``SIGSTOP``: a stopped process cannot fork, and
a fork under way is restarted), and the processes that descend from its leader but are outside the
group are noted, each with its start time. They get every signal the group gets, and once the group
has ended, ``SIGKILL`` — the same process only (pid and start time), never one that reused its pid.
Only Linux has ``/proc`` to find them; elsewhere nothing is held and the group is signalled as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from acp_hermes_memory.values import value

_HOLD_SECONDS = 0.5  # at most this long for the group's processes to stop before looking
_HOLD_POLL_SECONDS = 0.005
_STOPPED = frozenset("tTZX")  # stopped, traced, or already ended


@value
class ProcessEntry:
    """One line of ``/proc/<pid>/stat``, as far as ending a tree needs it."""

    pid: int
    ppid: int
    group: int
    state: str
    start: int  # clock ticks after boot: with the pid, this one process and no later one


def processes() -> dict[int, ProcessEntry]:
    """Every process this one can see, by pid (empty where there is no ``/proc``)."""
    found: dict[int, ProcessEntry] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            entry = _entry(int(name))
            if entry is not None:
                found[entry.pid] = entry
    return found


def _entry(pid: int) -> ProcessEntry | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after the command's name, which may hold anything
    if len(fields) < 20:
        return None
    return ProcessEntry(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))


def descendants(root: int, table: dict[int, ProcessEntry]) -> list[ProcessEntry]:
    """The processes below ``root`` in ``table`` (children, their children, …)."""
    children: dict[int, list[ProcessEntry]] = {}
    for entry in table.values():
        children.setdefault(entry.ppid, []).append(entry)
    found: dict[int, ProcessEntry] = {}
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child.pid != root and child.pid not in found:
                found[child.pid] = child
                waiting.append(child.pid)
    return list(found.values())


class HeldGroup:
    """A process group led by ``group`` (its leader's pid), stopped at once; ``look`` then notes every
    process below its leader: those in the group and those that escaped it."""

    def __init__(self, group: int) -> None:
        self.group = group
        self.tree: list[ProcessEntry] = []
        self.held = _signal_group(group, signal.SIGSTOP)  # False: the group is gone

    def look(self) -> None:
        """Wait (briefly, blocking) for the group's processes to stop, then note the tree below the leader."""
        if not self.held:
            return
        deadline = time.monotonic() + _HOLD_SECONDS
        while True:
            tree = descendants(self.group, processes())
            members = [entry for entry in tree if entry.group == self.group]
            if all(entry.state in _STOPPED for entry in members) or time.monotonic() >= deadline:
                break
            time.sleep(_HOLD_POLL_SECONDS)
        self.tree = [entry for entry in tree if entry.state not in "ZX"]

    @property
    def escaped(self) -> list[ProcessEntry]:
        """The processes below the leader that a signal to the group does not reach."""
        return [entry for entry in self.tree if entry.group != self.group]

    def signal(self, sig: int) -> bool:
        """``sig`` to the group (then ``SIGCONT``, so a held process takes it) and to each process that
        escaped it; False once the group is gone."""
        for entry in self.escaped:
            _signal_same(entry, sig)
        alive = _signal_group(self.group, sig)
        _signal_group(self.group, signal.SIGCONT)
        return alive

    def finish(self) -> None:
        """The leader has ended (or been killed): ``SIGKILL`` whatever noted below it still runs — in the
        group or out of it; a sandbox init that missed its own end is one — and let nothing stay stopped."""
        for entry in self.tree:
            _signal_same(entry, signal.SIGKILL)
        _signal_group(self.group, signal.SIGCONT)


def _signal_group(group: int, sig: int) -> bool:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_same(entry: ProcessEntry, sig: int) -> None:
    """``sig`` to ``entry``'s process if that pid is still that process: a pidfd pins the process, and
    its start time tells it is the one noted, not a later one that reused the pid."""
    handle: int | None = None
    try:
        handle = os.pidfd_open(entry.pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):  # no pidfds here: only the moment between the look and the kill is open
        handle = None
    try:
        now = _entry(entry.pid)
        if now is None or now.start != entry.start or now.state in "ZX":
            return
        with contextlib.suppress(OSError):
            if handle is not None:
                signal.pidfd_send_signal(handle, sig)
            else:
                os.kill(entry.pid, sig)
    finally:
        if handle is not None:
            os.close(handle)
