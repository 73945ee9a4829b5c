"""Making workspace paths as a snapshot had them: deletions first, then writes fed by one git.

Deletions go deepest first, so whatever stands where a snapshot has something else (a file
where a directory must be, or the reverse) is out of the way before the writes; writes go in
path order, each blob read from one ``git cat-file --batch`` just when it is needed, so memory
holds one file at a time. A path that cannot be made goes to ``failed`` with the reason and the
others go on.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

from acp_hermes_tools.checkpoints import workspace
from acp_hermes_tools.checkpoints.git import Git
from acp_hermes_tools.checkpoints.records import CheckpointsUnavailable, FileState, RestoreReport

OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_Plan = list[tuple[str, list[str], FileState]]


def make_files(git: Git, root: Path, files: Mapping[str, FileState]) -> RestoreReport:
    """Make each path under ``root`` as ``files`` says; what could not be done is in the report."""
    written: list[str] = []
    deleted: list[str] = []
    failed: list[tuple[str, str]] = []
    plan: _Plan = []
    for path, state in files.items():
        try:
            plan.append((path, workspace.components(path), _checked(state)))
        except workspace.Refused as exc:
            failed.append((path, str(exc)))
    deletions = sorted((item for item in plan if item[2].absent), key=lambda item: -len(item[1]))
    writes = sorted((item for item in plan if not item[2].absent), key=lambda item: item[1])
    with workspace.opened_root(root) as root_fd:
        for path, parts, _ in deletions:
            if _attempt(failed, path, partial(workspace.delete, root_fd, parts)):
                deleted.append(path)
        if writes:
            with git.batch("cat-file", "--batch") as cat:
                for path, parts, state in writes:
                    assert state.blob is not None and state.mode is not None
                    data = _blob(cat, state.blob)
                    if data is None:
                        failed.append((path, f"blob {state.blob} is not in the store"))
                    elif _attempt(failed, path, partial(workspace.write, root_fd, parts, data, state.mode)):
                        written.append(path)
    return RestoreReport(tuple(written), tuple(deleted), tuple(failed))


def read_blobs(git: Git, blobs: Iterable[str]) -> dict[str, bytes]:
    """Each blob's bytes through one ``cat-file --batch`` (a blob the store lacks is left out)."""
    found: dict[str, bytes] = {}
    wanted = list(dict.fromkeys(blobs))
    if not wanted:
        return found
    with git.batch("cat-file", "--batch") as cat:
        for blob in wanted:
            data = _blob(cat, blob)
            if data is not None:
                found[blob] = data
    return found


def sweep(root: Path, paths: list[str]) -> None:
    """Remove the temp files a killed restore may have left next to ``paths``."""
    directories = {tuple(path.split("/")[:-1]) for path in paths}
    with workspace.opened_root(root) as root_fd:
        for directory in directories:
            try:
                workspace.remove_temp_files(root_fd, list(directory))
            except (workspace.Refused, OSError):
                continue


def _checked(state: FileState) -> FileState:
    if state.absent:
        return state
    if state.mode not in workspace.MODES:
        raise workspace.Refused(f"mode {state.mode} cannot be restored")
    if not OBJECT_ID.fullmatch(state.blob or ""):
        raise workspace.Refused(f"{state.blob!r} is not a blob id")
    return state


def _attempt(failed: list[tuple[str, str]], path: str, action: Callable[[], None]) -> bool:
    try:
        action()
    except workspace.Refused as exc:
        failed.append((path, str(exc)))
    except OSError as exc:
        failed.append((path, exc.strerror or str(exc)))
    else:
        return True
    return False


def _blob(cat: subprocess.Popen[bytes], blob: str) -> bytes | None:
    """One blob's bytes from the running ``cat-file --batch`` (None when the store lacks it)."""
    assert cat.stdin is not None and cat.stdout is not None
    try:
        cat.stdin.write(blob.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
    except OSError as exc:
        raise CheckpointsUnavailable(f"git cat-file stopped: {exc}") from exc
    if header[1:] == [b"missing"]:
        return None
    if len(header) != 3:
        raise CheckpointsUnavailable(f"git cat-file answered {b' '.join(header)!r}")
    size = int(header[2])
    data = cat.stdout.read(size + 1)[:size]
    if len(data) != size:
        raise CheckpointsUnavailable("git cat-file stopped in the middle of an object")
    return data if header[1] == b"blob" else None
