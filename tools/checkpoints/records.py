"""What the checkpoint store hands out: snapshots, file states, restore reports, and its errors.

Plain frozen values, so callers on the event loop can keep and compare them after the worker
thread that produced them is done.
"""

from __future__ import annotations

from typing import Any

from acp_hermes_memory.values import value


class CheckpointError(Exception):
    """Base of the store's errors."""


class CheckpointsUnavailable(CheckpointError):
    """No git to run, or the store cannot be used (git failed on it): the message says why."""


class WorkspaceTooLarge(CheckpointError):
    """The workspace has more files than checkpoints take: the message says how many and the limit."""


@value
class Snapshot:
    """One checkpoint: a parentless commit of the workspace and the ref that keeps it."""

    ref: str  # full ref name, e.g. "refs/checkpoints/<session>/0003"
    commit: str  # commit id (hex)
    created_at: float  # unix time (whole seconds: the commit's date)
    meta: dict[str, Any]  # what the caller passed, plus "skipped_large" when files were left out


@value
class FileState:
    """One path in a snapshot; both fields None when the path is absent there."""

    blob: str | None
    mode: str | None  # "100644", "100755", "120000" (symlink) or None when absent

    @property
    def absent(self) -> bool:
        return self.blob is None


ABSENT = FileState(None, None)


@value
class RestoreReport:
    """What a restore did: paths written, paths deleted (or already absent), and (path, why) it could not do."""

    written: tuple[str, ...]
    deleted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
