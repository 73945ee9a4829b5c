"""What a sandboxed command may never write, although it sits inside a writable workspace.

The sandbox's job is to hold what runs unasked; the workspace is writable inside it, and some
files in a workspace are programs that run *later, outside* the sandbox with the user's full
rights: a repository's hooks and ``core.fsmonitor`` (at the next ``git status`` by the user or
the editor's git panel), ``.envrc`` (direnv), ``.vscode/`` and ``.idea/`` (tasks and run
configurations), ``.mcp.json`` (MCP servers), ``.gitmodules``, the project's ``.hermes/`` and,
when the workspace holds the home folder, shell start-up files and every other dot-folder there.

So, just before each sandboxed command, ``scan`` finds every such entry that exists under the
writable roots (each ``.git`` — directory or pointer file — with the git directory it points to
and the hooks directory its configuration names; the mandatory names; in a home folder, its
dot-entries but a few caches) and the sandbox binds them read-only *after* the writable binds.
A whole ``.git`` is read-only, not only its hooks and config: git also reads ``commondir``,
``config.worktree``, ``info/attributes`` and the gitdirs of submodules, and only an allowlist
holds. Git commands that write a repository therefore ask to run outside the sandbox.

A mount cannot cover what does not exist yet, so a command could still *create* such an entry
(or move a protected folder's parent away and make a new one). ``audit`` compares the entries
after the command with those before, by inode: a new ``.git`` is kept only when it is inert
(what ``git init`` or ``git clone`` makes: a known layout, sample hooks, configuration keys that
run nothing); anything else new is moved out of the workspace into the agent's quarantine folder
and reported, so nothing is lost and nothing planted stays where it would run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from acp_hermes_memory.fs import private_directory
from acp_hermes_memory.values import value
from acp_hermes_tools.paths import is_within

log = logging.getLogger(__name__)

# Entries that run code or configure what runs, wherever they are in a workspace.
MANDATORY_NAMES = frozenset({".git", ".hermes", ".vscode", ".idea", ".envrc", ".mcp.json", ".gitmodules", ".gitconfig"})
# Generated trees the scan does not enter: large, rebuilt by tools, never where an editor looks for config.
_SKIPPED_DIRS = frozenset({
    "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    "target", ".next", ".gradle",
})
MAX_DEPTH = 6  # levels below a root that are searched
MAX_DIRECTORIES = 20_000  # a bound on one scan's work in a huge workspace


@value
class Entry:
    """A protected entry as found: its path and the inode that was there."""

    path: Path
    device: int
    inode: int


@value
class Protection:
    """What one sandboxed command may not write: bound read-only, in this order, after the writable roots."""

    read_only: tuple[Path, ...]
    entries: tuple[Entry, ...]  # every protected entry found, for the audit


@value
class Quarantined:
    """An entry a sandboxed command created where it would run later, and where it was moved."""

    path: Path
    moved_to: Path
    reason: str

    def line(self) -> str:
        """One line for the model and the user: what was moved, why, where it is now, what to do."""
        return (f"The sandbox moved {self.path} to {self.moved_to}: {self.reason}, and a command that ran "
                "unasked may not leave that where it would run outside the sandbox. If it is needed, run the "
                "command again with outside_sandbox: true and the user will be asked.")


_WHAT_RUNS = {
    ".git": "a repository's .git (git runs its hooks and configuration later)",
    ".envrc": "direnv's .envrc (it runs when a shell enters the folder)",
    ".vscode": "editor configuration (tasks, settings that run programs)",
    ".idea": "editor configuration (run configurations)",
    ".mcp.json": "MCP server configuration (the servers it names are started later)",
    ".gitmodules": "git submodule configuration",
    ".gitconfig": "git configuration (it can make git run programs)",
    ".hermes": "the project's acp-hermes configuration",
}


def protected_reason(path: Path, roots: tuple[Path, ...], home: Path) -> str | None:
    """Why writing ``path`` (absolute, normalised) would plant what runs later outside the sandbox,
    which keeps it read-only; None for anything else. Pure: the command analysis asks by it."""
    root = next((root for root in roots if is_within(path, (root,))), None)
    if root is None:
        return None
    for part in path.relative_to(root).parts:
        if part.lower() in MANDATORY_NAMES:
            return _WHAT_RUNS[part.lower()] + ", which the sandbox keeps read-only"
    if is_within(home, (root,)) and path != home and is_within(path, (home,)) \
            and path.relative_to(home).parts[0].startswith("."):
        return "a start-up or configuration file in the home folder, which the sandbox keeps read-only"
    return None


_SETTLED_NS = 2_000_000_000  # a file changed this recently may change again within its timestamp's grain
_Stamp = tuple[int, int, int, int]  # a file's inode, size, and change and modification times


class Listings:
    """What one session's scans read, kept between them, each with the identity and times of what it came
    from: a folder's listing as the scan needs it (the protected names in it, the folders to look through),
    and what each ``.git`` makes git read (``_git_dependencies``)."""

    def __init__(self) -> None:
        self.folders: dict[str, tuple[_Stamp, tuple[str, ...], tuple[str, ...]]] = {}
        self.git: dict[str, tuple[tuple[tuple[Path, bool], ...], tuple[_Stamp | None, ...], tuple[Path, ...]]] = {}


def scan(roots: tuple[Path, ...], home: Path, listings: Listings | None = None) -> Protection:
    """The protected entries under ``roots`` now (blocking I/O: call it off the event loop).

    ``listings`` keeps what was read between scans of one session: a folder or file whose identity
    and times are unchanged (and not so recent that a change could hide in the same timestamp) is
    not read again, so a scan of an unchanged workspace costs one ``stat`` per folder and a few per
    repository.
    """
    listings = Listings() if listings is None else listings
    found: dict[Path, Entry] = {}
    read_only: dict[Path, None] = {}
    for path in _named_entries(roots, listings):
        entry = _entry(path)
        if entry is None:
            continue
        found[path] = entry
        read_only[path] = None
        if path.name.lower() == ".git":
            for extra in _git_dependencies(path, listings):
                if extra.exists() and is_within(extra, roots) and not any(is_within(extra, (p,)) for p in read_only):
                    read_only[extra] = None
    if is_within(home, roots):
        for path in _home_dot_entries(home):
            entry = _entry(path)
            if entry is not None:
                found[path] = entry
                read_only[path] = None
    return Protection(tuple(read_only), tuple(found.values()))


def _entry(path: Path) -> Entry | None:
    try:
        status = path.lstat()
    except OSError:
        return None
    return Entry(path, status.st_dev, status.st_ino)


def _named_entries(roots: tuple[Path, ...], listings: Listings) -> Iterator[Path]:
    """Entries with a mandatory name within ``MAX_DEPTH`` levels of each root (symlinks not followed)."""
    visited = 0
    now = time.time_ns()
    level = [str(root) for root in roots]
    for _ in range(MAX_DEPTH + 1):  # breadth first, a level at a time: the roots, then MAX_DEPTH levels below
        below: list[str] = []
        for directory in level:
            visited += 1
            if visited > MAX_DIRECTORIES:
                log.warning("sandbox: stopped looking for protected files after %d directories", MAX_DIRECTORIES)
                return
            _, protected, folders = _listing(directory, listings, now)
            for name in protected:
                yield Path(directory, name)
            below += folders
        level = below


_UNREADABLE: tuple[_Stamp, tuple[str, ...], tuple[str, ...]] = ((0, 0, 0, 0), (), ())


def _listing(directory: str, listings: Listings, now: int) -> tuple[_Stamp, tuple[str, ...], tuple[str, ...]]:
    """``directory``'s stamp, the protected names in it and the paths of the folders in it to look through,
    in listing order (the hot path of a scan: one ``stat`` when the folder is unchanged)."""
    try:
        status = os.stat(directory, follow_symlinks=False)
    except OSError:
        listings.folders.pop(directory, None)
        return _UNREADABLE
    stamp = (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    cached = listings.folders.get(directory)
    if cached is not None and cached[0] == stamp and now - max(stamp[2], stamp[3]) > _SETTLED_NS:
        return cached
    protected: list[str] = []
    folders: list[str] = []
    try:
        with os.scandir(directory) as found:
            for child in found:
                lowered = child.name.lower()
                if lowered in MANDATORY_NAMES:
                    protected.append(child.name)
                elif lowered not in _SKIPPED_DIRS and _is_directory(child):
                    folders.append(child.path)
    except OSError:
        return _UNREADABLE
    listing = (stamp, tuple(protected), tuple(folders))
    listings.folders[directory] = listing
    return listing


def _stamp_of(status: os.stat_result) -> _Stamp:
    return status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def _settled(stamp: _Stamp | None, now: int) -> bool:
    return stamp is None or now - max(stamp[2], stamp[3]) > _SETTLED_NS


def _stamp(path: Path, follow: bool) -> _Stamp | None:
    try:
        return _stamp_of(os.stat(path, follow_symlinks=follow))
    except OSError:
        return None


def _is_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _home_dot_entries(home: Path) -> list[Path]:
    """A home folder's dot-entries: start-up files, tool configuration, programs on ``PATH``
    (``~/.local/bin``), caches that later runs trust (``~/.cache/pre-commit``). Inside a workspace
    they are read-only, all of them: which of them run code is a list nobody can finish. Caches
    that honour ``XDG_CACHE_HOME`` go to the session's private temp directory instead."""
    try:
        return sorted(Path(entry.path) for entry in os.scandir(home) if entry.name.startswith("."))
    except OSError:
        return []


def _git_dependencies(dot_git: Path, listings: Listings) -> tuple[Path, ...]:
    """What else a ``.git`` makes git read: the directory a pointer file names, its common
    directory, and the hooks directory the configuration sets (``core.hooksPath``, e.g. ``.husky``).
    Worked out again only when a file it came from changed (``listings``: each is stamped before it is read)."""
    now = time.time_ns()
    cached = listings.git.get(str(dot_git))
    if cached is not None and all(_settled(stamp, now) for stamp in cached[1]) \
            and tuple(_stamp(path, follow) for path, follow in cached[0]) == cached[1]:
        return cached[2]
    read = [(dot_git, False), (dot_git, True)]
    stamps = [_stamp(dot_git, False), _stamp(dot_git, True)]

    def reading(path: Path) -> Path:
        read.append((path, True))
        stamps.append(_stamp(path, True))
        return path

    extra = tuple(_git_reads(dot_git, reading))
    listings.git[str(dot_git)] = (tuple(read), tuple(stamps), extra)
    return extra


def _git_reads(dot_git: Path, reading: Callable[[Path], Path]) -> list[Path]:
    """``_git_dependencies`` worked out, each file it reads named to ``reading`` first."""
    gitdir = dot_git
    extra: list[Path] = []
    if dot_git.is_file() and not dot_git.is_symlink():
        target = git_pointer(dot_git)
        if target is None:
            return []
        gitdir = target
        extra.append(gitdir)
    common = gitdir
    with contextlib.suppress(OSError, UnicodeDecodeError):
        named = reading(gitdir / "commondir").read_text(encoding="utf-8").strip()
        if named:
            common = Path(os.path.normpath(gitdir / named))
            extra.append(common)
    hooks = (git_config_keys(reading(common / "config")) or {}).get("core.hookspath")
    if hooks:
        work_tree = dot_git.parent
        extra.append(Path(os.path.normpath(work_tree / os.path.expanduser(hooks))))
    return extra


def git_pointer(pointer: Path) -> Path | None:
    """The git directory a ``.git`` file points to (``gitdir: …``), resolved against its folder."""
    try:
        text = pointer.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    if not first.startswith("gitdir:"):
        return None
    return Path(os.path.normpath(pointer.parent / first.removeprefix("gitdir:").strip()))


# -- after the command -------------------------------------------------------------------------


def audit(before: Protection, roots: tuple[Path, ...], home: Path, quarantine: Path,
          listings: Listings | None = None) -> list[Quarantined]:
    """Move out what the command created among protected entries (blocking I/O: off the event loop)."""
    known = {(entry.device, entry.inode) for entry in before.entries}
    trusted_gitdirs = tuple(entry.path for entry in before.entries if entry.path.name.lower() == ".git")
    moved: list[Quarantined] = []
    folder: list[Path] = []  # this audit's folder in the quarantine, made on first need
    for entry in scan(roots, home, listings).entries:
        if (entry.device, entry.inode) in known:
            continue  # there before (perhaps moved with its parent): it stayed read-only throughout
        reason = _why_not_inert(entry.path, trusted_gitdirs)
        if reason is None:
            continue
        target = _quarantine(entry.path, roots, quarantine, folder)
        if target is not None:
            log.warning("sandbox: moved %s to %s (%s)", entry.path, target, reason)
            moved.append(Quarantined(entry.path, target, reason))
    return moved


def _why_not_inert(path: Path, trusted_gitdirs: tuple[Path, ...]) -> str | None:
    """None for a new ``.git`` that runs nothing; otherwise why the entry may not stay."""
    name = path.name.lower()
    if name != ".git":
        return f"{path.name} configures programs that run outside the sandbox"
    if path.is_symlink():
        return "a .git that is a symbolic link"
    if path.is_file():
        target = git_pointer(path)
        if target is not None and any(is_within(target, (gitdir,)) for gitdir in trusted_gitdirs):
            return None  # a worktree or submodule of a repository that was protected all along
        return "a .git file pointing at a git directory made inside the sandbox"
    return inert_git_dir_problem(path)


# What ``git init`` and ``git clone`` put in a git directory.
_GIT_DIR_LAYOUT = frozenset({
    "head", "config", "description", "hooks", "info", "objects", "refs", "index", "logs", "packed-refs",
    "branches", "fetch_head", "orig_head", "commit_editmsg", "shallow",
})
_INERT_KEY_PREFIXES = ("remote.", "branch.", "user.", "submodule.")
_INERT_REMOTE_KEYS = frozenset({"url", "fetch", "pushurl", "tagopt", "promisor", "partialclonefilter", "mirror",
                                "remote", "merge", "rebase", "name", "email", "active"})
_INERT_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.quotepath",
    "core.sparsecheckout", "core.compression", "init.defaultbranch", "extensions.objectformat",
    "extensions.refstorage", "pull.rebase", "pull.ff", "push.default", "fetch.prune", "gc.auto", "color.ui",
    "index.version", "feature.manyfiles", "lfs.repositoryformatversion", "receive.denycurrentbranch",
})


def inert_git_dir_problem(gitdir: Path) -> str | None:
    """None when ``gitdir`` is laid out as git makes it and its configuration runs nothing; else why not."""
    try:
        names = [entry.name for entry in os.scandir(gitdir)]
    except OSError as error:
        return f"an unreadable .git ({error.strerror})"
    unexpected = [name for name in names if name.lower() not in _GIT_DIR_LAYOUT]
    if unexpected:
        return f"a .git holding {unexpected[0]}, which git does not make"
    with contextlib.suppress(OSError):
        hooks = [entry.name for entry in os.scandir(gitdir / "hooks") if not entry.name.endswith(".sample")]
        if hooks:
            return f"a .git with the hook {hooks[0]}"
    with contextlib.suppress(OSError):
        extra = [entry.name for entry in os.scandir(gitdir / "info") if entry.name != "exclude"]
        if extra:
            return f"a .git with info/{extra[0]}"
    config = git_config_keys(gitdir / "config")
    if config is None:
        return "a .git whose configuration cannot be read as git's own"
    for key in config:
        if key not in _INERT_KEYS and not (
            key.startswith(_INERT_KEY_PREFIXES) and key.rsplit(".", 1)[-1] in _INERT_REMOTE_KEYS
        ):
            return f"a .git whose configuration sets {key}"
    return None


def git_config_keys(path: Path) -> dict[str, str] | None:
    """A git configuration file's keys (``section.subsection.key``, all lowercased but the
    subsection) with their last values; None when the file holds anything this careful reader does
    not understand, so a caller deciding what is safe treats it as unsafe. A missing file has none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError):
        return None
    keys: dict[str, str] = {}
    section: str | None = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            end = _section_end(line)
            section = _section_name(line[1:end]) if end is not None else None
            if end is None or section is None:
                return None
            line = line[end + 1 :].strip()  # git allows a key on the header's line
        if not line or line.startswith(("#", ";")):
            continue
        name, _, rest = line.partition("=")
        name = name.strip()
        if not section or not name[:1].isalpha() or not all(c.isalnum() or c == "-" for c in name):
            return None
        keys[f"{section}.{name.lower()}"] = rest.strip().strip('"')
    return keys


def _section_end(line: str) -> int | None:
    quoted = escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "]" and not quoted:
            return index
    return None


def _section_name(header: str) -> str | None:
    name, _, subsection = header.strip().partition(" ")
    if not name or not all(c.isalnum() or c in "-." for c in name):
        return None
    subsection = subsection.strip()
    if not subsection:
        return name.lower()
    if len(subsection) < 2 or not (subsection[0] == subsection[-1] == '"'):
        return None
    return f"{name.lower()}.{subsection[1:-1]}"


def _quarantine(path: Path, roots: tuple[Path, ...], quarantine: Path, folder: list[Path]) -> Path | None:
    """Move ``path`` into this audit's quarantine folder (``folder``: empty until it is made)."""
    root = next((root for root in roots if is_within(path, (root,))), None)
    if root is None:
        return None
    try:
        if not folder:
            private_directory(quarantine)
            folder.append(Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=quarantine)))
        target = folder[0] / root.name / path.relative_to(root)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.move(str(path), str(target))
    except OSError as error:
        log.error("sandbox: could not move %s out of the workspace: %s", path, error)
        return None
    return target
