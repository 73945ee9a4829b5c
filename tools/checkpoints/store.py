"""The checkpoint store: a shadow git repository per workspace, outside it, that never touches its ``.git``.

Layout of ``<checkpoints home>/<sha256(realpath(workspace))[:16]>/`` (0700):

- ``git/``: the repository (bare; ``GIT_WORK_TREE`` points at the workspace for each command);
- ``index``: its index, a stat cache of the workspace, so a snapshot reads only what changed;
- ``base``: the tree the index stands for (the last snapshot's) and the index's checksum then;
- ``workspace``: the workspace's path (for ``stores``, the CLI and the doctor);
- ``lock``: held by every operation of every process, so snapshots, restores and pruning of one
  workspace never interleave (threads too: each operation opens the lock file afresh);
- ``restore-journal.json`` while a restore is under way (see ``journal``).

Each snapshot is a commit without a parent that a ref keeps, so dropping a snapshot is deleting its
ref, and pruning is deleting refs and letting ``git prune`` collect what nothing holds any more.
A snapshot runs three git processes: ``ls-files`` (what changed, see ``scan``), ``fast-import``
(the commit, see ``importer``) and, when something changed, ``update-index``. Each leaves a small
pack; every few dozen snapshots they are rolled into one (``_compact``).

Left out of snapshots: what ``.gitignore`` files (and the workspace's ``.git/info/exclude``)
ignore, files over ``max_file_bytes`` (listed in the snapshot's ``meta["skipped_large"]``),
unreadable files (``meta["skipped_unreadable"]``), nested repositories (git would record only a
gitlink, which restores nothing), the store itself when it lies inside the workspace, and Python's
bytecode caches (``DERIVED``) even where no ``.gitignore`` names them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import atomic_write_text, delete_exactly, exclusive_lock
from acp_hermes_tools.checkpoints import importer, restore
from acp_hermes_tools.checkpoints.git import ATTRIBUTES, Git, init_repository
from acp_hermes_tools.checkpoints.journal import JOURNAL_NAME, read_journal, remove_journal, write_journal
from acp_hermes_tools.checkpoints.records import (
    ABSENT,
    CheckpointsUnavailable,
    FileState,
    RestoreReport,
    Snapshot,
    WorkspaceTooLarge,
)
from acp_hermes_tools.checkpoints.scan import index_entries, list_changes

log = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_FILES = 50_000
PREFIX = "refs/checkpoints/"
BASE_REF = "refs/acp-hermes/base"  # set by prune: keeps the tree the next snapshot builds on
REFRESH_NOW_FILES = 100  # a snapshot storing this many files refreshes the index at once (see _snapshot)
REFRESH_NOW_BYTES = 1024 * 1024  # or this much content
COMPACT_AT_PACKS = 24  # each snapshot is a small pack; this many are rolled into one
TOO_LARGE_RECHECK_SECONDS = 600.0  # a workspace found too large is not walked again for this long
# Made by running the code, not by anyone's edit: a restore has nothing to give back in them, and listed they
# would read as changes of yours (``/rollback``'s list). Left out even where no .gitignore names them.
DERIVED = ["__pycache__/"]
_REF = re.compile(r"refs/[A-Za-z0-9._/@+-]+")
_SNAPSHOT_FORMAT = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)"
_DIRECTORY_FDS = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")


class CheckpointStore:
    """Snapshots of one workspace and restores from them. Blocking: call it from a worker thread."""

    def __init__(self, directory: Path, workspace: Path, *, max_file_bytes: int, max_files: int,
                 git: str | None = None) -> None:
        self.directory = Path(os.path.abspath(directory))
        self.workspace = Path(os.path.realpath(workspace))
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._executable = git if git is not None else shutil.which("git")
        self._git_dir = self.directory / "git"
        self._journal = self.directory / JOURNAL_NAME
        self._index = self.directory / "index"
        self._ready: Git | None = None
        self._too_large: tuple[float, WorkspaceTooLarge] | None = None

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.workspace)!r} in {str(self.directory)!r})"

    @classmethod
    def for_workspace(cls, home: Path, workspace: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                      max_files: int = DEFAULT_MAX_FILES, git: str | None = None) -> CheckpointStore:
        """The store of ``workspace`` under ``home`` (the checkpoints home), named by its real path."""
        real = os.path.realpath(workspace)
        key = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
        return cls(home / key, Path(real), max_file_bytes=max_file_bytes, max_files=max_files, git=git)

    # --- snapshots ------------------------------------------------------------------------------

    def snapshot(self, ref: str, meta: dict[str, Any]) -> Snapshot:
        """Commit the workspace as it is now (without a parent) and point ``ref`` at it."""
        if not _REF.fullmatch(ref) or ".." in ref or "/." in ref or "//" in ref or ref.endswith((".lock", "/")):
            raise ValueError(f"{ref!r} is not a full ref name git takes")
        json.dumps(meta)  # a caller's mistake shows before any work
        if self._too_large is not None and time.monotonic() < self._too_large[0]:
            raise self._too_large[1]
        if not self.workspace.is_dir():
            raise CheckpointsUnavailable(f"the workspace {self.workspace} is not a directory")
        with self._locked() as git:
            return self._snapshot(git, ref, meta)

    def snapshots(self, prefix: str = PREFIX) -> list[Snapshot]:
        """Every snapshot whose ref starts with ``prefix``, oldest first."""
        with self._locked() as git:
            return self._snapshots(git, prefix)

    def delete(self, refs: Iterable[str]) -> None:
        with self._locked() as git:
            self._delete(git, list(refs))

    def prune(self, *, keep: int, max_age_seconds: float, now: float | None = None) -> int:
        """Drop checkpoints beyond the newest ``keep`` and those older than ``max_age_seconds`` (a
        ``<ref>-<word>`` snapshot goes with ``<ref>``), then repack and collect what nothing holds any
        more. Returns how many checkpoints were dropped."""
        now = time.time() if now is None else now
        with self._locked() as git:
            every = self._snapshots(git, PREFIX)
            groups = _grouped(every)
            gone = [group for position, group in enumerate(groups)
                    if position < len(groups) - keep or now - group[0].created_at > max_age_seconds]
            self._drop(git, [snapshot.ref for group in gone for snapshot in group], everything=False)
        return len(gone)

    def forget(self, prefixes: Iterable[str]) -> int:
        """Drop every checkpoint whose ref starts with one of ``prefixes`` (a deleted session's) and
        collect what nothing holds any more, so their copies of the workspace's files leave the disk.
        When no checkpoint is left, the index and the base tree go too: the store then holds no file of
        the workspace. Returns how many checkpoints were dropped."""
        prefixes = tuple(prefixes)
        with self._locked() as git:
            every = self._snapshots(git, PREFIX)
            gone = [snapshot for snapshot in every if snapshot.ref.startswith(prefixes)]
            self._drop(git, [snapshot.ref for snapshot in gone], everything=len(gone) == len(every))
        return len(_grouped(gone))

    def _drop(self, git: Git, refs: list[str], *, everything: bool) -> None:
        """Delete ``refs``, then repack and collect what nothing holds. The tree the next snapshot builds
        on is kept by a ref, unless ``everything`` goes (then the next snapshot starts afresh)."""
        if not refs:
            return
        base = None if everything else self._base_tree()
        if everything:
            self._forget_base()
        keep_base = f"update {BASE_REF} {base}\n" if base else f"delete {BASE_REF}\n"
        git.run("update-ref", "--stdin", stdin=(keep_base + _deletions(refs)).encode())
        git.run("repack", "-a", "-d", "-q")
        git.run("prune", "--expire=now")
        git.run("pack-refs", "--all", "--prune")

    # --- reading snapshots ----------------------------------------------------------------------

    def changes(self, old: str, new: str) -> dict[str, tuple[FileState, FileState]]:
        """The paths whose content or mode differ between two snapshots' commits: (old state, new state)."""
        _check_revision(old)
        _check_revision(new)
        with self._locked() as git:
            output = git.run("diff-tree", "-r", "-z", "--no-renames", old, new)
        fields = output.split(b"\0")
        found: dict[str, tuple[FileState, FileState]] = {}
        for header, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            old_mode, new_mode, old_blob, new_blob, _ = header.lstrip(b":").decode().split(" ")
            found[os.fsdecode(raw_path)] = (_state(old_mode, old_blob), _state(new_mode, new_blob))
        return found

    def states(self, commit: str, paths: Iterable[str]) -> dict[str, FileState]:
        """What each path was in ``commit`` (``ABSENT`` where it was not a file), in one ``ls-tree``."""
        _check_revision(commit)
        found = dict.fromkeys(paths, ABSENT)
        if not found:
            return found
        pathspecs = ["--", *found] if len(found) <= 1_000 else []  # beyond: the whole tree, filtered here
        with self._locked() as git:
            output = git.run("ls-tree", "-r", "-z", "--full-tree", commit, *pathspecs)
        for record in output.split(b"\0"):
            if record:
                header, _, raw_path = record.partition(b"\t")
                path = os.fsdecode(raw_path)
                mode, kind, blob = header.decode().split(" ")
                if path in found and kind == "blob":
                    found[path] = FileState(blob, mode)
        return found

    def states_now(self, paths: Iterable[str]) -> dict[str, FileState]:
        """What each path of the workspace is now, as a snapshot would record it (no git, no lock: read only)."""
        return {path: importer.state_now(self.workspace, path, self.max_file_bytes) for path in paths}

    def read(self, blob: str) -> bytes:
        _check_revision(blob)
        with self._locked() as git:
            return git.run("cat-file", "blob", blob)

    def read_many(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Many blobs' bytes through one git process (a preview of many files); missing ones left out."""
        wanted = list(blobs)
        for blob in wanted:
            _check_revision(blob)
        with self._locked() as git:
            return restore.read_blobs(git, wanted)

    # --- restoring ------------------------------------------------------------------------------

    def restore(self, files: Mapping[str, FileState]) -> RestoreReport:
        """Make each workspace path as given (``ABSENT``: delete it), journaled, each file atomically."""
        with self._locked() as git:
            leftover = read_journal(self._journal)
            if leftover is not None:
                log.warning("finishing an interrupted restore of %s first", self.workspace)
                self._finish(git, leftover)
            return self._apply(git, dict(files))

    def recover(self) -> RestoreReport | None:
        """Finish the restore a killed process left (its journal); None when there is none."""
        if not self._journal.exists():
            return None
        with self._locked() as git:
            plan = read_journal(self._journal)
            return None if plan is None else self._finish(git, plan)

    # --- the store itself ---------------------------------------------------------------------

    def size_bytes(self) -> int:
        """Bytes on disk under the store's directory (allocated blocks, not file lengths)."""
        total = 0
        for folder, _, names in os.walk(self.directory):
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    info = os.lstat(os.path.join(folder, name))
                    total += getattr(info, "st_blocks", 0) * 512 or info.st_size
        return total

    def problem(self) -> str | None:
        """Why the store cannot be used (None when it can): no git, missing parts, an unfinished
        restore, or objects missing (``git fsck --connectivity-only``)."""
        if self._executable is None:
            return "git is not installed (not found on PATH)"
        if not (self._git_dir / "HEAD").is_file() or not (self._git_dir / "objects").is_dir():
            return f"{self.directory} has no git repository"
        if not (self.directory / "workspace").is_file():
            return f"{self.directory} does not say which workspace it belongs to"
        if self._journal.exists():
            return "a restore was interrupted; recovering finishes it"
        try:
            with self._locked() as git:
                git.run("fsck", "--connectivity-only", "--no-dangling", "--no-progress")
        except CheckpointsUnavailable as exc:
            return str(exc)
        return None

    # --- inside the lock ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Git]:
        if self._executable is None:
            raise CheckpointsUnavailable("git is not installed (not found on PATH): checkpoints need it")
        if self._ready is None and shutil.which(self._executable) is None:
            raise CheckpointsUnavailable(f"cannot run git: {self._executable} is not an executable file")
        if not _DIRECTORY_FDS:
            raise CheckpointsUnavailable("checkpoints need directory descriptors (O_NOFOLLOW), which this OS lacks")
        with exclusive_lock(self.directory / "lock"):
            yield self._ready or self._prepare(self._executable)

    def _prepare(self, executable: str) -> Git:
        """Create what is missing of the store (once per instance, under the lock)."""
        if not (self._git_dir / "HEAD").is_file():
            init_repository(executable, self._git_dir)
        attributes = self._git_dir / "info" / "attributes"
        if not attributes.is_file() or attributes.read_text(encoding="utf-8") != ATTRIBUTES:
            atomic_write_text(attributes, ATTRIBUTES, private=True)
        owner = self.directory / "workspace"
        if not owner.is_file():
            atomic_write_text(owner, str(self.workspace), private=True)
        elif owner.read_text(encoding="utf-8") != str(self.workspace):
            raise CheckpointsUnavailable(f"{self.directory} is the store of another workspace")
        self._ready = Git(executable, self._git_dir, self.workspace, self._index)
        return self._ready

    def _snapshots(self, git: Git, prefix: str) -> list[Snapshot]:
        output = git.run("for-each-ref", "--sort=refname", "--sort=committerdate",
                         f"--format={_SNAPSHOT_FORMAT}", prefix)
        found = []
        for line in output.decode("utf-8", "surrogateescape").splitlines():
            ref, commit, date, subject = line.split("\0", 3)
            if not date:
                continue  # not a commit (the base ref points at a tree)
            try:
                meta = json.loads(subject)
            except ValueError:
                meta = {}
            found.append(Snapshot(ref, commit, float(date), meta if isinstance(meta, dict) else {}))
        return found

    def _delete(self, git: Git, refs: list[str]) -> None:
        if refs:
            git.run("update-ref", "--stdin", stdin=_deletions(refs).encode())

    def _apply(self, git: Git, files: dict[str, FileState]) -> RestoreReport:
        write_journal(self._journal, files)
        report = restore.make_files(git, self.workspace, files)
        remove_journal(self._journal)
        return report

    def _finish(self, git: Git, plan: dict[str, FileState]) -> RestoreReport:
        """Redo a killed restore's whole plan (what it did already is made again, harmlessly), after
        sweeping the temp file it may have left half written."""
        restore.sweep(self.workspace, list(plan))
        return self._apply(git, plan)

    def _snapshot(self, git: Git, ref: str, meta: dict[str, Any]) -> Snapshot:
        created = int(time.time())
        base = self._base_tree()
        if base is None:
            self._forget_base()  # an index that stands for no known tree would hide changes: start afresh
        try:
            listing = list_changes(git, self.workspace, tracked=index_entries(self._index), max_files=self.max_files,
                                   excludes=[*DERIVED, *self._own_directory_pattern()])
        except WorkspaceTooLarge as exc:
            self._too_large = (time.monotonic() + TOO_LARGE_RECHECK_SECONDS, exc)
            raise
        self._too_large = None
        found = importer.plan(self.workspace, listing, self.max_file_bytes)
        meta = dict(meta)
        if found.skipped_large:
            meta["skipped_large"] = found.skipped_large
        if found.skipped_unreadable:
            meta["skipped_unreadable"] = found.skipped_unreadable
        try:
            written = importer.commit(git, self.workspace, found, base_tree=base, ref=ref, when=created,
                                      message=json.dumps(meta).encode(), max_file_bytes=self.max_file_bytes)
        except CheckpointsUnavailable:
            if base is None:
                raise
            log.warning("a snapshot of %s on top of the last one failed; taking a full one", self.workspace)
            self._forget_base()  # e.g. the last tree went missing: nothing of the old state is trusted
            return self._snapshot(git, ref, meta)
        if written.index_info:
            # The stored entries go in without stat data. The refresh that adds it (where the file still
            # matches) runs first thing in the next snapshot's update-index, one process fewer, unless
            # a lot was stored: until refreshed, every listing hashes those files again.
            git.run("update-index", "-q", "--refresh", "--add", "--remove", "--replace", "-z", "--index-info",
                    stdin=b"".join(written.index_info))
            if len(written.index_info) >= REFRESH_NOW_FILES or written.stored_bytes >= REFRESH_NOW_BYTES:
                git.run("update-index", "-q", "--refresh")
        if written.index_info or written.tree != base:
            atomic_write_text(self.directory / "base", f"{written.tree} {_index_checksum(self._index)}\n",
                              private=True)
        self._compact(git)
        return Snapshot(ref, written.commit, float(created), meta)

    def _base_tree(self) -> str | None:
        """The tree the index stands for (the last snapshot's), when the index is the one it was
        recorded with; after a crash between the two, or without one, the next snapshot starts afresh."""
        try:
            tree, checksum = (self.directory / "base").read_text(encoding="utf-8").split()
        except (FileNotFoundError, ValueError):
            return None
        return tree if checksum == _index_checksum(self._index) else None

    def _forget_base(self) -> None:
        delete_exactly(self._index)
        delete_exactly(self.directory / "base")

    def _compact(self, git: Git) -> None:
        """Roll the small packs snapshots leave into one when there are many (a geometric repack
        leaves the big first pack alone, so this stays cheap as the store grows), and pack the refs:
        each pack and each loose ref takes disk blocks of its own."""
        try:
            packs = sum(name.endswith(".pack") for name in os.listdir(self._git_dir / "objects" / "pack"))
        except FileNotFoundError:
            return
        if packs >= COMPACT_AT_PACKS:
            git.run("repack", "-d", "-q", "--geometric=2", "--window=0")  # deltas: prune's full repack
            git.run("pack-refs", "--all", "--prune")

    def _own_directory_pattern(self) -> list[str]:
        """An exclude pattern for the store itself when it lies inside the workspace (HERMES_HOME there)."""
        try:
            inside = Path(os.path.realpath(self.directory)).relative_to(self.workspace)
        except ValueError:
            return []
        return [f"/{inside.as_posix()}/"]


def stores(home: Path) -> list[CheckpointStore]:
    """Every store under the checkpoints home (for the CLI, the doctor and recovery)."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(os.scandir(home), key=lambda entry: entry.name):
            owner = Path(entry.path) / "workspace"
            if entry.is_dir(follow_symlinks=False) and owner.is_file():
                workspace = Path(owner.read_text(encoding="utf-8"))
                found.append(CheckpointStore(Path(entry.path), workspace, max_file_bytes=DEFAULT_MAX_FILE_BYTES,
                                             max_files=DEFAULT_MAX_FILES))
    return found


def recover_all(home: Path) -> list[tuple[Path, RestoreReport]]:
    """Finish every restore a killed process left behind; a store that cannot is logged and skipped."""
    finished = []
    for store in stores(home):
        try:
            report = store.recover()
        except CheckpointsUnavailable as exc:
            log.warning("cannot finish the interrupted restore of %s: %s", store.workspace, exc)
            continue
        if report is not None:
            finished.append((store.workspace, report))
    return finished


def _grouped(snapshots: list[Snapshot]) -> list[list[Snapshot]]:
    """Snapshots counted as one checkpoint, oldest first: a ref named ``<ref>-<word>`` (the snapshot
    taken when that checkpoint's turn ended) goes with ``<ref>``, kept or dropped with it."""
    groups: dict[str, list[Snapshot]] = {}
    for snapshot in snapshots:
        head, _, _ = snapshot.ref.rpartition("-")
        owner = head if head and head in groups and "/" not in snapshot.ref[len(head):] else snapshot.ref
        groups.setdefault(owner, []).append(snapshot)
    return list(groups.values())


def _deletions(refs: list[str]) -> str:
    return "".join(f"delete {ref}\n" for ref in refs)


def _index_checksum(index: Path) -> str:
    """The trailing checksum git writes into the index (changes whenever the index does)."""
    try:
        with open(index, "rb") as handle:
            handle.seek(-20, os.SEEK_END)
            return handle.read(20).hex()
    except OSError:
        return "none"


def _state(mode: str, blob: str) -> FileState:
    return ABSENT if mode == "000000" else FileState(blob, mode)


def _check_revision(name: str) -> None:
    if not name or name.startswith("-") or any(character.isspace() for character in name):
        raise ValueError(f"{name!r} is not a commit, ref or blob id")
