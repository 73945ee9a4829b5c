"""Skill folders on disk for tests."""

from __future__ import annotations

from pathlib import Path


def put(root: Path, relative: str, text: str) -> Path:
    """Write a file directly, as another process (or the user) would."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
