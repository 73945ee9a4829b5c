"""What the tests share: the harness that drives the real server, the scripted model, wire checks,
and in-process collaborators for unit tests."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
