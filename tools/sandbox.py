"""An OS sandbox around the commands the agent runs: the hard boundary behind the permission rules.

Classifying shell text can never be complete, so a command that runs without asking runs inside
a sandbox the kernel enforces. On Linux (and WSL2) that is bubblewrap, set up in this order:

1. the whole file system read-only; a minimal ``/dev``, a fresh ``/proc``;
2. writable: the session's workspace roots and a private temp directory (``$TMPDIR``, at the
   same path inside and out, so the file tools see what commands leave there);
3. read-only again, inside those roots: whatever would run later outside the sandbox — every
   ``.git``, ``.envrc``, ``.vscode/``, ``.mcp.json``, the project's ``.hermes/`` … and, in a home
   folder that is part of the workspace, every dot-entry (``tools.protected_paths``); what a
   command creates among them anyway is moved out after it (``SessionSandbox.audit``);
4. hidden, last, so no writable root can un-hide them: the user's credentials and the agent's
   own home (``$HERMES_HOME``);
5. no capabilities, even when started as root (a new user namespace, every capability dropped,
   no further user namespaces, and root seen as ``nobody`` inside), its own process, IPC and
   (unless allowed) network namespaces; ``/proc`` read-only as a whole (no kernel knob under
   ``/proc/sys``, no ``/proc/sysrq-trigger``), like ``/sys`` under the read-only ``/``;
6. a seccomp filter that allows only the socket families commands need (``tools.seccomp``): the
   ssh-agent, D-Bus, Docker, syslog and X11 sockets stay out of reach through the read-only ``/``;
7. an environment built from an allowlist (``tools.command_env``), for bubblewrap itself too (its
   own process is the sandbox's pid 1, whose environment every command can read): no tokens, no
   socket addresses.

Two ways to start it, the same sandbox: ``Confinement.launch`` for a process the agent spawns itself
(bubblewrap exec'd directly with only the allowlisted environment, the filter handed over as an
inherited descriptor: nothing in front of it), and ``Confinement.wrap`` for a command line someone
else starts (an editor's terminal: only an argv crosses, so ``env -i`` and a one-line shell that
opens the filter go in front).

The start-up probe checks from inside that the capability set is empty, the filter loaded and
``/proc`` read-only; where it is not, there is no sandbox and the user is told. On macOS, ``sandbox-exec`` with a
Seatbelt profile does the same with rules: writes only in the roots (never to the protected
names, existing or new), no reads of the hidden paths, no network, no Unix sockets.

What it does not do: it does not stop a command from damaging the workspace it may write, nor
code the project itself runs later (its tests, build scripts, package scripts) from being
changed; and it trusts the kernel features it uses (namespaces, seccomp; Seatbelt).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from acp_hermes_memory.values import value
from acp_hermes_tools import temp_dirs
from acp_hermes_tools.command_env import command_environment
from acp_hermes_tools.protected_paths import MANDATORY_NAMES, Listings, Protection, Quarantined, audit, scan
from acp_hermes_tools.seccomp import LAUNCHER, filter_file
from acp_hermes_tools.spawn import Launch

log = logging.getLogger(__name__)

# Relative to the home directory: credentials a command has no business reading.
HIDDEN_IN_HOME = (
    ".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".config/gcloud", ".config/gh", ".config/hub",
    ".password-store", ".local/share/keyrings", ".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
    ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
)
NO_PROTECTION = Protection((), ())


@value
class SandboxProfile:
    """What a sandboxed command may touch."""

    writable: tuple[Path, ...]  # the workspace roots
    scratch: Path  # the session's private temp directory: $TMPDIR inside
    hidden: tuple[Path, ...]  # made empty and unreadable inside
    network: bool = False
    read_only: tuple[Path, ...] = ()  # inside the writable roots: what runs later outside (found per command)
    environment: tuple[tuple[str, str], ...] = ()  # the variables the command sees, all of them
    seccomp: Path | None = None  # the filter bubblewrap loads

    def with_network(self) -> SandboxProfile:
        return SandboxProfile(self.writable, self.scratch, self.hidden, True, self.read_only, self.environment,
                              self.seccomp)


class Sandbox(Protocol):
    @property
    def name(self) -> str: ...

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        """The command line that runs ``argv`` inside the sandbox ``profile`` describes, whoever starts it."""
        ...

    def launch(self, argv: list[str], profile: SandboxProfile, seccomp_fd: int | None) -> Launch:
        """``argv`` inside the sandbox, for a spawn of the agent's own (``seccomp_fd``: the filter, opened)."""
        ...


@value
class Bubblewrap:
    executable: str
    name: str = "bubblewrap"
    disable_userns: bool = True  # bubblewrap 0.8 and later

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        # Bubblewrap's own process stays in the sandbox as its pid 1, with the environment bubblewrap was
        # started with, readable in /proc/1/environ: so bubblewrap itself starts with the command's
        # environment only (``env -i``), whoever spawns it (an editor's terminal gets only this argv).
        clean = [_ENV, "-i", *(f"{name}={text}" for name, text in _variables(profile))]
        if profile.seccomp is None:
            return [*clean, *self._arguments(profile), "--", *argv]
        return [*clean, "/bin/sh", "-c", LAUNCHER, "sh", str(profile.seccomp), *self._arguments(profile),
                "--seccomp", "3", "--", *argv]

    def launch(self, argv: list[str], profile: SandboxProfile, seccomp_fd: int | None) -> Launch:
        # The same sandbox as ``wrap`` with no exec in front: bubblewrap gets the allowlisted environment
        # from the spawn itself, and the filter as a descriptor the spawn passes on (any number will do).
        seccomp = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
        return Launch((*self._arguments(profile), *seccomp, "--", *argv), dict(_variables(profile)),
                      (seccomp_fd,) if seccomp_fd is not None else ())

    def _arguments(self, profile: SandboxProfile) -> list[str]:
        """Bubblewrap and its options for ``profile``, all but the filter."""
        args = [
            self.executable, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-user", *(["--disable-userns"] if self.disable_userns else []), *_unprivileged_ids(),
            "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
            # A fresh /proc, read-only as a whole: bubblewrap covers /proc/sys only where it looks writable
            # to it, and as root it does not look so while its files are (core_pattern runs a program as
            # the host's root). Read-only, no kernel knob, /proc/sysrq-trigger or process setting changes.
            "--proc", "/proc", "--remount-ro", "/proc",
        ]  # fmt: skip
        for root in (*profile.writable, profile.scratch):
            args += ["--bind", str(root), str(root)]
        for path in profile.read_only:
            args += ["--ro-bind-try", str(path), str(path)]
        # The filter's folder too: no command may rewrite the filter the next one loads.
        hidden = (*profile.hidden, *([profile.seccomp.parent] if profile.seccomp is not None else []))
        for path in hidden:  # after every writable bind: a root that holds one cannot un-hide it
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        if not profile.network:
            args.append("--unshare-net")
        return args


_ENV = "/usr/bin/env"
NOBODY = 65534  # the overflow id: what unmapped ids look like inside a user namespace


def _unprivileged_ids() -> list[str]:
    """Root outside is not root inside: the command sees itself as ``nobody``.

    Bubblewrap maps the id it runs as onto the one named here. Started as root, the command's files
    still belong to root outside (the workspace stays writable as before), but inside it is no longer
    uid 0, so nothing that trusts uid 0 within the namespace (an ``execve`` that would grant root its
    capabilities back) applies; the kernel's own checks are closed by the read-only mounts above.
    """
    if os.getuid() != 0:
        return []
    return ["--uid", str(NOBODY), "--gid", str(NOBODY)]


def _variables(profile: SandboxProfile) -> tuple[tuple[str, str], ...]:
    """Every variable the command sees: the allowlisted environment, temp files and caches in the
    session's private directory."""
    scratch = profile.scratch
    return (*profile.environment, ("TMPDIR", str(scratch)), ("XDG_CACHE_HOME", str(scratch / ".cache")))


@value
class Seatbelt:
    executable: str
    name: str = "sandbox-exec"

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        variables = [f"{name}={text}" for name, text in _variables(profile)]
        return [_ENV, "-i", *variables, self.executable, "-p", seatbelt_profile(profile), "--", *argv]

    def launch(self, argv: list[str], profile: SandboxProfile, seccomp_fd: int | None) -> Launch:
        return Launch((self.executable, "-p", seatbelt_profile(profile), "--", *argv), dict(_variables(profile)))


def seatbelt_profile(profile: SandboxProfile) -> str:
    """A Seatbelt (SBPL) profile: everything readable but the hidden paths, writes only where allowed
    and never to a protected name (a rule on the name also stops creating one), no Unix sockets."""

    def quoted(path: Path) -> str:
        return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'

    writable = " ".join(f"(subpath {quoted(path)})" for path in (*profile.writable, profile.scratch))
    hidden = " ".join(f"(subpath {quoted(path)})" for path in profile.hidden)
    names = "|".join(sorted(name.replace(".", "\\.") for name in MANDATORY_NAMES))
    rules = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        f"(allow file-write* {writable} (literal \"/dev/null\") (subpath \"/dev/fd\") (regex #\"^/dev/tty\"))",
        f'(deny file-write* (regex #"/({names})(/|$)"))',
        '(deny network-outbound (subpath "/"))',  # a path-based (Unix socket) address
    ]
    rules += [f"(deny file-write* (subpath {quoted(path)}))" for path in profile.read_only]
    if hidden:
        rules.append(f"(deny file-read* {hidden})")
    if not profile.network:
        rules.append('(deny network* (remote ip "*:*"))')
    return "\n".join(rules)


@dataclass
class SandboxStatus:
    """Whether commands can be sandboxed on this machine, and why not when they cannot."""

    sandbox: Sandbox | None
    detail: str
    checked: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.sandbox is not None


SANDBOX_OFF = "turned off in the configuration (sandbox: off)"


def sandbox_status(enabled: bool, probe: Future[None] | None = None) -> SandboxStatus:
    """The sandbox commands get with the configuration's ``sandbox`` setting (``enabled``: not off), once
    ``probe`` (``detect`` begun on a thread at start-up) has finished; one that failed is tried again here."""
    if probe is not None:
        with contextlib.suppress(Exception):
            probe.result()
    return detect() if enabled else SandboxStatus(None, SANDBOX_OFF)


@functools.cache
def detect() -> SandboxStatus:
    """The sandbox this machine offers, tried once per process: a bubblewrap that exists but cannot
    create namespaces (as under some container runtimes), cannot drop every capability or cannot
    load the socket filter does not count."""
    if sys.platform == "darwin":
        executable = shutil.which("sandbox-exec")
        if executable is None:
            return SandboxStatus(None, "sandbox-exec not found")
        return SandboxStatus(Seatbelt(executable), f"Seatbelt ({executable})")
    executable = shutil.which("bwrap")
    if executable is None:
        return SandboxStatus(None, "bubblewrap (bwrap) not found: install the bubblewrap package")
    seccomp = filter_file()
    if seccomp is None:
        return SandboxStatus(None, "no seccomp filter for this machine's architecture, so host sockets stay reachable")
    failure = ""
    for sandbox in (Bubblewrap(executable), Bubblewrap(executable, disable_userns=False)):
        failure = _probe(sandbox, seccomp)
        if not failure:
            version = subprocess.run([executable, "--version"], capture_output=True, text=True,
                                     check=False).stdout.strip()
            return SandboxStatus(sandbox, f"{version or 'bubblewrap'} ({executable})")
    return SandboxStatus(None, failure)


def _probe(sandbox: Bubblewrap, seccomp: Path) -> str:
    """Why ``sandbox`` does not hold on this machine, or "" when it does (checked from inside)."""
    scratch = temp_dirs.make("probe")
    try:
        profile = SandboxProfile((), scratch, (), environment=(("PATH", "/usr/bin:/bin"),), seccomp=seccomp)
        try:
            probe = subprocess.run(sandbox.wrap(["/bin/sh", "-c", _PROBE], profile), capture_output=True,
                                   timeout=10, check=False, text=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap does not start: {exc}"
    finally:
        temp_dirs.release(scratch)
    if probe.returncode != 0:
        detail = probe.stderr.strip().splitlines()[-1:] or [f"exit status {probe.returncode}"]
        return f"bubblewrap cannot create a sandbox here: {detail[0]}"
    status = dict(line.split(":", 1) for line in probe.stdout.splitlines() if ":" in line)
    capabilities = status.get("CapEff", "").strip()
    if int(capabilities or "1", 16) != 0:
        return f"bubblewrap cannot drop every capability here (CapEff {capabilities or 'unknown'})"
    if status.get("Seccomp", "").strip() != "2":
        return "bubblewrap did not load the seccomp filter"
    if status.get("ProcSys", "").strip() != "read-only":
        return "bubblewrap left /proc/sys writable"
    return ""


# What the probe reads from inside: the process's status, and whether a kernel knob can be opened for writing.
_PROBE = "cat /proc/self/status; test -w /proc/sys/kernel/core_pattern && echo ProcSys: writable || " \
         "echo ProcSys: read-only"


def hidden_paths(home: Path, hermes_home: Path) -> tuple[Path, ...]:
    """The credentials under ``home`` and the agent's own ``hermes_home``, resolved."""
    candidates = [home / relative for relative in HIDDEN_IN_HOME] + [hermes_home]
    return tuple(dict.fromkeys(Path(os.path.realpath(path)) for path in candidates))


@value
class Confinement:
    """One command's sandbox: the sandbox to wrap it in, what it may touch, what was protected."""

    sandbox: Sandbox
    profile: SandboxProfile
    protection: Protection = NO_PROTECTION

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` confined, as one command line anyone can start (an editor's terminal)."""
        return self.sandbox.wrap(argv, self.profile)

    @contextlib.contextmanager
    def launch(self, argv: list[str]) -> Iterator[Launch]:
        """``argv`` confined, for a spawn of the agent's own inside this block: the filter is opened here
        (close-on-exec, so only the spawn that is passed it inherits it) and closed when the block ends."""
        seccomp = self.profile.seccomp
        descriptor = os.open(seccomp, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW) if seccomp is not None else None
        try:
            yield self.sandbox.launch(argv, self.profile, descriptor)
        finally:
            if descriptor is not None:
                os.close(descriptor)


class SessionSandbox:
    """One session's use of the sandbox: on or off, what it allows, its private temp directory."""

    def __init__(self, *, enabled: bool, writable: tuple[Path, ...], hidden: tuple[Path, ...],
                 network_allowed: bool, session_id: str, home: Path | None = None, quarantine: Path | None = None,
                 extra_environment: tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> None:
        self.enabled = enabled
        self.writable = tuple(Path(os.path.realpath(root)) for root in writable)
        self.hidden = hidden
        self.network_allowed = network_allowed
        self.home = Path(os.path.realpath(home or Path.home()))
        self.quarantine = quarantine or Path(tempfile.gettempdir()) / "acp-hermes-quarantine"
        self._extra_environment = extra_environment
        self._environ = environ if environ is not None else os.environ
        self._session_id = session_id
        self._scratch: Path | None = None
        self._pending: list[Quarantined] = []  # moved after a background command, not yet reported
        self._lock = threading.Lock()  # the folder listings and the pending list, shared by worker threads
        self._listings = Listings()

    @property
    def status(self) -> SandboxStatus:
        return sandbox_status(self.enabled)

    @property
    def available(self) -> bool:
        return self.status.available

    @property
    def holds_home(self) -> bool:
        """Whether a workspace root is (or contains) the home folder."""
        return any(self.home == root or root in self.home.parents for root in self.writable)

    def confinement(self, network: bool) -> Confinement:
        """One command's sandbox, with what is protected in the workspace right now (blocking: it
        looks through the workspace; call it off the event loop)."""
        sandbox = self.status.sandbox
        if sandbox is None:
            raise RuntimeError(f"no sandbox: {self.status.detail}")
        network = network or self.network_allowed
        with self._lock:
            protection = scan(self.writable, self.home, self._listings)
        environment = command_environment(self._environ, network=network, extra=self._extra_environment)
        seccomp = filter_file() if isinstance(sandbox, Bubblewrap) else None
        profile = SandboxProfile(self.writable, self.scratch(), self.hidden, network, protection.read_only,
                                 tuple(sorted(environment.items())), seccomp)
        return Confinement(sandbox, profile, protection)

    def audit(self, confinement: Confinement) -> list[Quarantined]:
        """After a command ran in ``confinement``: move out what it created that would run later
        outside the sandbox (blocking: call it off the event loop)."""
        with self._lock:
            return audit(confinement.protection, self.writable, self.home, self.quarantine, self._listings)

    def audit_when_done(self, process: subprocess.Popen[bytes], confinement: Confinement) -> None:
        """Audit a background command when it ends (on a thread of its own); ``take_pending`` reports it."""

        def watch() -> None:
            process.wait()
            moved = self.audit(confinement)
            with self._lock:
                self._pending += moved

        threading.Thread(target=watch, name=f"sandbox-audit-{process.pid}", daemon=True).start()

    def take_pending(self) -> list[Quarantined]:
        """What background commands' audits moved since the last call."""
        with self._lock:
            moved, self._pending = self._pending, []
        return moved

    def scratch(self) -> Path:
        """The session's private temp directory ($TMPDIR inside the sandbox), made on first use and named
        after this process (``tools.temp_dirs``), so a later start removes it if this process is killed."""
        if self._scratch is None:
            tag = "".join(c for c in self._session_id if c.isalnum() or c in "-_")[:32] or "session"
            self._scratch = temp_dirs.make("sandbox", tag)
        return self._scratch

    def discard(self) -> None:
        """Remove the private temp directory (the session ended); a later command would get a new one."""
        if self._scratch is not None:
            temp_dirs.release(self._scratch)
            self._scratch = None

    def describe(self) -> list[str]:
        """What the sandbox means for this session, one line each (``/sandbox``, ``doctor``)."""
        status = self.status
        if not status.available:
            return [f"no sandbox: {status.detail}", "every command asks before it runs, as without a sandbox"]
        network = "allowed" if self.network_allowed else "off (a command that needs it asks first)"
        lines = [
            f"sandbox: {status.detail}",
            f"writable: {', '.join(str(path) for path in self.writable)} and a private $TMPDIR "
            f"({self.scratch()}); everything else read-only",
            "read-only inside the workspace: every .git and " + ", ".join(sorted(MANDATORY_NAMES - {".git"}))
            + " (what would run later outside the sandbox); what a command creates among them is moved to "
            f"{self.quarantine}",
            f"hidden: {', '.join(str(path) for path in self.hidden if path.exists()) or '(none present)'}",
            f"network: {network}; Unix sockets outside (ssh-agent, D-Bus, Docker, syslog) out of reach",
            "no capabilities and no kernel settings (/proc and /sys read-only), even as root (nobody inside)",
            "environment: only the variables commands need (PATH, HOME, locale, terminal, toolchains); no tokens",
        ]
        if self.holds_home:
            lines.append(HOME_NOTICE)
        return lines


HOME_NOTICE = (
    "⚠️ The workspace holds your home folder. Commands are confined all the same: credentials and the agent's "
    "own home stay hidden, and every dot-file and dot-folder there (shell start-up files, tool configuration, "
    "~/.local/bin) is read-only to them; everything else in it is writable by commands that run unasked."
)
