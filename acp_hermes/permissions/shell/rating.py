"""The vocabulary of a command's rating: its verdict, what was found, where it runs, and what a write
there means.

Shared by the risk engine (``risk``) and the per-program checks (``programs``): a check gets one
``Call`` — the program's words, where the line runs, what has been found so far — and reports on it;
what the program itself runs (``find -exec``, ``git rebase --exec``, ``ssh host cmd``) it hands back
to the engine through the call (``rate_line``, ``rate_words``), so nested commands are judged as if
they stood on the line. Pure functions of their arguments (no I/O).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from acp_hermes.permissions.shell.arguments import names
from acp_hermes.permissions.shell.parse import Command, Lines, Word
from acp_hermes_tools.protected_paths import protected_reason
from acp_hermes_tools.sensitive_paths import PROFILE_NAMES, sensitive_path_reason

RiskLevel = Literal["normal", "dangerous", "catastrophic"]

_RANK: dict[RiskLevel, int] = {"normal": 0, "dangerous": 1, "catastrophic": 2}


@dataclass(frozen=True, slots=True)
class CommandRisk:
    """The verdict on a command line; ``reasons`` are short phrases shown to the user.

    ``network`` says the line probably needs the network (a sandbox without it would make it
    fail), ``outside_writes`` names the paths outside the workspace it writes and
    ``scratch_writes`` those in shared temp directories (/tmp): harmless as such, but outside a
    sandbox's private ``$TMPDIR``. ``protected_writes`` are what it writes that the sandbox keeps
    read-only because it would run later outside it (a repository's ``.git``, ``.envrc`` …): such a
    line can only run outside the sandbox. ``opaque`` says why the analysis cannot see every
    program the line runs (inline interpreter code, a program named at run time …): without a
    sandbox such a line never runs unasked.
    """

    level: RiskLevel
    reasons: tuple[str, ...] = ()
    network: bool = False
    outside_writes: tuple[str, ...] = ()
    scratch_writes: tuple[str, ...] = ()
    protected_writes: tuple[str, ...] = ()
    opaque: tuple[str, ...] = ()


class Findings:
    """What the rating of one line has found so far."""

    def __init__(self) -> None:
        self._found: list[tuple[RiskLevel, str]] = []
        self.network = False
        self.outside_writes: list[str] = []
        self.scratch_writes: list[str] = []
        self.protected_writes: list[str] = []
        self.opaque: list[str] = []

    def add(self, level: RiskLevel, reason: str) -> None:
        if (level, reason) not in self._found:
            self._found.append((level, reason))

    def dangerous(self, reason: str) -> None:
        self.add("dangerous", reason)

    def catastrophic(self, reason: str) -> None:
        self.add("catastrophic", reason)

    def hidden(self, reason: str) -> None:
        """The analysis cannot see what runs: the line asks wherever no sandbox holds it."""
        self.opaque.append(reason)
        self.dangerous(f"runs what acp-hermes cannot see in full ({reason})")

    def risk(self) -> CommandRisk:
        outside, scratch = tuple(dict.fromkeys(self.outside_writes)), tuple(dict.fromkeys(self.scratch_writes))
        protected, opaque = tuple(dict.fromkeys(self.protected_writes)), tuple(dict.fromkeys(self.opaque))
        if not self._found:
            return CommandRisk("normal", (), self.network, outside, scratch, protected, opaque)
        ordered = sorted(self._found, key=lambda found: -_RANK[found[0]])
        reasons = tuple(dict.fromkeys(reason for _, reason in ordered))
        return CommandRisk(ordered[0][0], reasons, self.network, outside, scratch, protected, opaque)


@dataclass
class Env:
    """Where a line runs, and the parses of its analysis."""

    home: str
    roots: tuple[str, ...]
    cwd: str | None  # where relative paths land: the command's directory, as ``cd`` on the line changes it
    hermes_home: str | None = None  # the agent's own home: secrets
    lines: Lines = field(default_factory=Lines)  # the analysis's parses: a text nested twice is parsed once


class Judge(Protocol):
    """The risk engine, as the per-program checks reach it: a command a program runs is judged as if
    it stood on the line."""

    def line(self, text: str, env: Env, findings: Findings, depth: int) -> None: ...

    def words(self, words: Sequence[Word], env: Env, findings: Findings, depth: int) -> None: ...


@dataclass
class Call:
    """One program invocation under inspection."""

    name: str
    words: list[Word]
    env: Env
    findings: Findings
    depth: int
    judge: Judge

    @property
    def args(self) -> list[str]:
        return [word.text for word in self.words[1:]]

    def rate_line(self, text: str) -> None:
        """A shell line this program runs (``git rebase --exec …``, ``ssh host …``)."""
        self.judge.line(text, self.env, self.findings, self.depth + 1)

    def rate_words(self, words: Sequence[Word]) -> None:
        """A command this program runs from its own arguments (``find -exec …``, ``uv run …``)."""
        self.judge.words(words, self.env, self.findings, self.depth + 1)

    def writes(self, target: str, *, deletes: bool = False) -> None:
        write_target(target, self.env, self.findings, deletes=deletes)


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------

_SYSTEM_DIRS = names(
    "bin boot dev etc home lib lib32 lib64 libx32 media mnt nix opt private proc root run sbin snap "
    "srv sys usr var Applications Library System Users"
)
RAW_DISK = re.compile(
    r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/.|disk/by-)", re.I
)
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_USER_HOME = re.compile(r"~([A-Za-z0-9._-]+)(/.*)?", re.S)
_SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/private/tmp")


def _expand_home(text: str, home: str) -> str:
    for prefix in ("~", "$HOME", "${HOME}"):
        if text == prefix or text.startswith(prefix + "/"):
            return home + text[len(prefix) :]
    other = _USER_HOME.fullmatch(text)
    if other:
        base = posixpath.dirname(home) if posixpath.dirname(home) != "/" else "/home"
        return posixpath.join(base, other.group(1)) + (other.group(2) or "")
    return text


def absolute(text: str, env: Env) -> str | None:
    """``text`` as a normalised absolute path, or None when it is relative."""
    path = _expand_home(text.strip(), env.home)
    if not path.startswith("/"):
        return None
    return posixpath.normpath("/" + path.lstrip("/"))


def resolved(text: str, env: Env) -> str | None:
    """``text`` as an absolute path: relative ones against the line's directory (None: unknown)."""
    found = absolute(text, env)
    if found is None and env.cwd is not None and "$" not in text and not text.startswith("~"):
        found = posixpath.normpath(posixpath.join(env.cwd, text))
    return found


def vital_path(text: str, env: Env) -> str | None:
    """Name the irreplaceable directory ``text`` denotes (/, home, a system dir), else None."""
    path = _expand_home(text.strip(), env.home)
    if not path.startswith("/"):
        return None
    path = "/" + path.lstrip("/")
    while path.endswith(("/*", "/.*")):  # a directory's whole contents count as the directory
        path = path[: path.rfind("/")] or "/"
    path = posixpath.normpath(path)
    home = posixpath.normpath(env.home)
    if path == "/":
        return "/"
    if path == home:
        return "the home directory"
    parent, name = posixpath.split(path)
    if parent == "/" and name in _SYSTEM_DIRS:
        return path
    if parent in ("/home", "/Users") or (parent == posixpath.dirname(home) and parent != "/"):
        return "a home directory"
    return None


def _protected_file(text: str, env: Env) -> str | None:
    """Name the system or shell-start-up file ``text`` denotes, else None."""
    path = absolute(text, env)
    if path is None:
        return None
    home = posixpath.normpath(env.home)
    if path == "/etc" or path.startswith(("/etc/", "/private/etc/")):
        return f"a system file ({path})"
    name = posixpath.basename(path)
    if posixpath.dirname(path) == home and name in PROFILE_NAMES:
        return f"a shell profile (~/{name})"
    if path == f"{home}/.config/fish/config.fish":
        return "a shell profile (~/.config/fish/config.fish)"
    if path.startswith(f"{home}/.ssh/"):
        return f"SSH configuration (~/.ssh/{path[len(home) + 6 :]})"
    return None


def outside_project(text: str, env: Env) -> bool:
    expanded = _expand_home(text, env.home)
    if "$" in expanded or expanded.startswith("~"):
        return True
    if not expanded.startswith("/"):
        relative = posixpath.normpath(expanded)
        return relative == ".." or relative.startswith("../")
    path = posixpath.normpath("/" + expanded.lstrip("/"))
    return not any(path == root or path.startswith(root.rstrip("/") + "/") for root in env.roots)


def _scratch(path: str) -> bool:
    return any(path == scratch or path.startswith(scratch + "/") for scratch in _SCRATCH_DIRS)


def write_target(target: str, env: Env, findings: Findings, *, deletes: bool = False) -> None:
    """A file the command writes (or, ``deletes``, removes): the same rules as the file tools'
    writes, and where it lands."""
    path = absolute(target, env) or target
    if RAW_DISK.match(path):
        findings.catastrophic(f"writes to a raw disk ({path})")
        return
    if not deletes and (path in HARMLESS_TARGETS or path.startswith("/dev/fd/")):
        return  # output thrown away or shown (``script -q /dev/null``, ``tee /dev/stderr``)
    verb = "deletes" if deletes else "writes"
    protected = _protected_file(target, env)
    if protected:
        findings.dangerous(f"{'deletes' if deletes else 'overwrites'} {protected}")
        return
    found = resolved(target, env)
    runs_later = protected_reason(Path(found), tuple(map(Path, env.roots)), Path(env.home)) if found else None
    if found is not None and runs_later:
        findings.protected_writes.append(found)
        findings.dangerous(f"{verb} {found}: {runs_later}")
        return
    if found is not None:
        reason = sensitive_path_reason(Path(found), Path(env.home))
        if reason:
            findings.dangerous(f"{verb} {reason} ({found})")
            return
    if env.roots and "$" not in target and outside_project(found or target, env):
        if _scratch(found or target):
            findings.scratch_writes.append(found or target)
        else:
            findings.outside_writes.append(found or target)
            findings.dangerous(f"{verb} outside the workspace ({found or target})")


def written_files(command: Command) -> Iterator[str]:
    """The files a command's redirections write (``> out``, ``&>> log``), devices that discard or show
    output left out."""
    for op, target in command.redirects:
        if op not in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
            continue
        if op == ">&" and (target.text.isdigit() or target.text == "-"):
            continue  # duplicates a file descriptor
        if target.text in HARMLESS_TARGETS or target.text.startswith("/dev/fd/"):
            continue
        yield target.text
