"""Checkpoints: snapshots of a workspace in a shadow git repository, and restores from them.

``CheckpointStore`` is the whole interface (see ``store`` for the layout and what a snapshot
leaves out); everything here blocks, so async callers run it in a worker thread.
"""

from acp_hermes_tools.checkpoints.records import (
    ABSENT,
    CheckpointError,
    CheckpointsUnavailable,
    FileState,
    RestoreReport,
    Snapshot,
    WorkspaceTooLarge,
)
from acp_hermes_tools.checkpoints.store import CheckpointStore, recover_all, stores

__all__ = [
    "ABSENT",
    "CheckpointError",
    "CheckpointStore",
    "CheckpointsUnavailable",
    "FileState",
    "RestoreReport",
    "Snapshot",
    "WorkspaceTooLarge",
    "recover_all",
    "stores",
]
