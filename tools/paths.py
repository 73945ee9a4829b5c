"""Paths as tools see them: resolved against the session's cwd, checked against its roots."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def resolve_path(raw: str, cwd: Path) -> Path:
    """Absolute, symlink- and ``..``-free path for ``raw`` (relative to ``cwd``)."""
    expanded = os.path.expanduser(raw.strip())
    joined = expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded)
    return Path(os.path.realpath(joined))


def is_within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)
