"""An OS sandbox around the commands the agent runs: the hard boundary behind the permission rules.

Classifying shell text can never be complete, so a command that runs without asking runs inside
a sandbox the kernel enforces: the whole file system read-only except the session's workspace
roots and a private temp directory (``$TMPDIR``, at the same path inside and out, so the file
tools see what commands leave there), the user's credentials and the agent's own home hidden,
no network unless allowed, and every child process inside it too (in its own process namespace
on Linux, so ending the sandbox ends them all: a cancelled command leaves nothing running). On Linux (and WSL2) that is
bubblewrap; on macOS, ``sandbox-exec`` with a Seatbelt profile. The command line is wrapped,
so the same boundary holds for a local subprocess and for a command in the editor's terminal.

What it does not do: it does not stop a command from damaging the workspace it may write, and
it trusts the kernel features it uses (user namespaces; Seatbelt).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memory.values import value

log = logging.getLogger(__name__)

# Relative to the home directory: credentials a command has no business reading.
HIDDEN_IN_HOME = (
    ".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".config/gcloud", ".config/gh", ".config/hub",
    ".password-store", ".local/share/keyrings", ".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
    ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
)
# Environment variables that are the agent's secrets, not the command's business.
SECRET_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HERMES_API_KEY")


@value
class SandboxProfile:
    """What a sandboxed command may touch."""

    writable: tuple[Path, ...]  # the workspace roots
    scratch: Path  # the session's private temp directory: $TMPDIR inside
    hidden: tuple[Path, ...]  # made empty and unreadable inside
    network: bool = False

    def with_network(self) -> SandboxProfile:
        return SandboxProfile(self.writable, self.scratch, self.hidden, True)


class Sandbox(Protocol):
    @property
    def name(self) -> str: ...

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        """The command line that runs ``argv`` inside the sandbox ``profile`` describes."""
        ...


@value
class Bubblewrap:
    executable: str
    name: str = "bubblewrap"

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        args = [
            self.executable, "--die-with-parent", "--new-session", "--unshare-pid",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--setenv", "TMPDIR", str(profile.scratch), "--setenv", "XDG_CACHE_HOME", str(profile.scratch / ".cache"),
        ]  # fmt: skip
        for path in profile.hidden:
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        for root in (*profile.writable, profile.scratch):
            args += ["--bind", str(root), str(root)]
        if not profile.network:
            args.append("--unshare-net")
        for name in SECRET_VARIABLES:
            args += ["--unsetenv", name]
        return [*args, "--", *argv]


@value
class Seatbelt:
    executable: str
    name: str = "sandbox-exec"

    def wrap(self, argv: list[str], profile: SandboxProfile) -> list[str]:
        return ["/usr/bin/env", *(f"-u{name}" for name in SECRET_VARIABLES),
                f"TMPDIR={profile.scratch}", self.executable, "-p", seatbelt_profile(profile), "--", *argv]


def seatbelt_profile(profile: SandboxProfile) -> str:
    """A Seatbelt (SBPL) profile: everything readable but the hidden paths, writes only where allowed."""

    def quoted(path: Path) -> str:
        return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'

    writable = " ".join(f"(subpath {quoted(path)})" for path in (*profile.writable, profile.scratch))
    hidden = " ".join(f"(subpath {quoted(path)})" for path in profile.hidden)
    rules = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        f"(allow file-write* {writable} (literal \"/dev/null\") (subpath \"/dev/fd\") (regex #\"^/dev/tty\"))",
    ]
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


@functools.cache
def detect() -> SandboxStatus:
    """The sandbox this machine offers, tried once per process (a bubblewrap that exists but
    cannot create namespaces, as under some container runtimes, does not count)."""
    if sys.platform == "darwin":
        executable = shutil.which("sandbox-exec")
        if executable is None:
            return SandboxStatus(None, "sandbox-exec not found")
        return SandboxStatus(Seatbelt(executable), f"Seatbelt ({executable})")
    executable = shutil.which("bwrap")
    if executable is None:
        return SandboxStatus(None, "bubblewrap (bwrap) not found: install the bubblewrap package")
    try:
        probe = subprocess.run(
            [executable, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", "true"],
            capture_output=True, timeout=10, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(None, f"bubblewrap does not start: {exc}")
    if probe.returncode != 0:
        detail = probe.stderr.decode(errors="replace").strip() or f"exit status {probe.returncode}"
        return SandboxStatus(None, f"bubblewrap cannot create a sandbox here: {detail}")
    version = subprocess.run([executable, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return SandboxStatus(Bubblewrap(executable), f"{version or 'bubblewrap'} ({executable})")


def hidden_paths(home: Path, hermes_home: Path) -> tuple[Path, ...]:
    """The credentials under ``home`` and the agent's own ``hermes_home``, resolved."""
    candidates = [home / relative for relative in HIDDEN_IN_HOME] + [hermes_home]
    return tuple(dict.fromkeys(Path(os.path.realpath(path)) for path in candidates))


@value
class Confinement:
    """One command's sandbox: the sandbox to wrap it in and what it may touch."""

    sandbox: Sandbox
    profile: SandboxProfile

    def wrap(self, argv: list[str]) -> list[str]:
        return self.sandbox.wrap(argv, self.profile)


class SessionSandbox:
    """One session's use of the sandbox: on or off, what it allows, its private temp directory."""

    def __init__(self, *, enabled: bool, writable: tuple[Path, ...], hidden: tuple[Path, ...],
                 network_allowed: bool, session_id: str) -> None:
        self.enabled = enabled
        self.writable = writable
        self.hidden = hidden
        self.network_allowed = network_allowed
        self._session_id = session_id
        self._scratch: Path | None = None

    @property
    def status(self) -> SandboxStatus:
        if not self.enabled:
            return SandboxStatus(None, "turned off in the configuration (sandbox: off)")
        return detect()

    @property
    def available(self) -> bool:
        return self.status.available

    def confinement(self, network: bool) -> Confinement:
        sandbox = self.status.sandbox
        if sandbox is None:
            raise RuntimeError(f"no sandbox: {self.status.detail}")
        profile = SandboxProfile(self.writable, self.scratch(), self.hidden, network or self.network_allowed)
        return Confinement(sandbox, profile)

    def scratch(self) -> Path:
        """The session's private temp directory ($TMPDIR inside the sandbox), made on first use."""
        if self._scratch is None:
            import tempfile

            tag = "".join(c for c in self._session_id if c.isalnum() or c in "-_")[:32] or "session"
            self._scratch = Path(tempfile.mkdtemp(prefix=f"acp-hermes-sandbox-{tag}-"))
        return self._scratch

    def discard(self) -> None:
        """Remove the private temp directory (the session ended); a later command would get a new one."""
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def describe(self) -> list[str]:
        """What the sandbox means for this session, one line each (``/sandbox``, ``doctor``)."""
        status = self.status
        if not status.available:
            return [f"no sandbox: {status.detail}", "every command asks before it runs, as without a sandbox"]
        network = "allowed" if self.network_allowed else "off (a command that needs it asks first)"
        return [
            f"sandbox: {status.detail}",
            f"writable: {', '.join(str(path) for path in self.writable)} and a private $TMPDIR "
            f"({self.scratch()}); everything else read-only",
            f"hidden: {', '.join(str(path) for path in self.hidden if path.exists()) or '(none present)'}",
            f"network: {network}",
        ]
