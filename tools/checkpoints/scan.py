"""What changed in the workspace since the store's index last saw it, in one ``git ls-files``.

The store's index is a stat cache of the workspace, kept equal in content to the tree of the
last snapshot: ``ls-files --others --modified --deleted`` walks the tree once (honouring
``.gitignore``) and names only the paths that differ from it, so a snapshot reads and hashes only
those. The same listing counts the workspace's files (the index's entry count, from its header,
plus the untracked ones), so the size limit costs no walk of its own.

Nested repositories show up as ``dir/`` entries; they are left out (git would record a gitlink,
which restores nothing). A workspace's ``.git`` is never listed.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from acp_hermes_memory.values import value
from acp_hermes_tools.checkpoints.git import Git
from acp_hermes_tools.checkpoints.records import WorkspaceTooLarge


@value
class Listing:
    untracked: list[str]  # new since the index (or left out before: too big, unreadable)
    tracked: list[str]  # in the index, and modified or deleted since


def index_entries(index_file: Path) -> int:
    """The entry count in a git index's header (0 when there is no index yet)."""
    try:
        with open(index_file, "rb") as handle:
            header = handle.read(12)
    except FileNotFoundError:
        return 0
    if len(header) < 12 or header[:4] != b"DIRC":
        return 0
    return int(struct.unpack(">I", header[8:12])[0])


def list_changes(git: Git, workspace: Path, *, tracked: int, max_files: int, excludes: list[str]) -> Listing:
    """The paths that differ from the index; ``WorkspaceTooLarge`` when the workspace has too many files."""
    args = ["ls-files", "-z", "-t", "--others", "--modified", "--deleted", "--exclude-standard"]
    info_exclude = workspace / ".git" / "info" / "exclude"
    if info_exclude.is_file():
        args.append(f"--exclude-from={info_exclude}")
    args += [f"--exclude={pattern}" for pattern in excludes]
    untracked: list[str] = []
    changed: set[str] = set()
    for record in git.run(*args).split(b"\0"):
        if len(record) < 3:
            continue
        path = os.fsdecode(record[2:])
        if record[:1] == b"?":
            if not path.endswith("/"):
                untracked.append(path)
        else:  # "C" (changed) or "R" (removed): a deleted file is listed as both
            changed.add(path)
    total = tracked + len(untracked)
    if total > max_files:
        raise WorkspaceTooLarge(
            f"{workspace} has {total:,} files, more than the {max_files:,} checkpoints take "
            "(checkpoints.max_files in config.yaml)"
        )
    return Listing(untracked, sorted(changed))
