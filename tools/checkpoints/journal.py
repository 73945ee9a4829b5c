"""The restore journal: what a restore set out to do, written before it touches the workspace.

A restore killed half-way leaves the workspace part old, part new. The journal lists every path
and the state it is to be in, so ``recover`` can make all of them so (re-making the ones already
done does no harm) and only then remove it. Written atomically (temp, fsync, rename): it is
either the whole plan or absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from acp_hermes_memory.fs import atomic_write_text, delete_exactly
from acp_hermes_tools.checkpoints.records import CheckpointsUnavailable, FileState

JOURNAL_NAME = "restore-journal.json"
_VERSION = 1


def write_journal(path: Path, files: Mapping[str, FileState]) -> None:
    plan = {name: [state.blob, state.mode] for name, state in files.items()}
    atomic_write_text(path, json.dumps({"version": _VERSION, "files": plan}), private=True)


def read_journal(path: Path) -> dict[str, FileState] | None:
    """The plan a killed restore left; None when there is none."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return {name: FileState(blob, mode) for name, (blob, mode) in document["files"].items()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointsUnavailable(f"the restore journal {path} cannot be read: {exc}") from exc


def remove_journal(path: Path) -> None:
    delete_exactly(path)
