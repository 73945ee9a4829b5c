"""The code base stays ruff-clean: checked as part of the test suite CI runs."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO_ROOT


def test_ruff_reports_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "acp_hermes", "tools", "memory", "tests", "bench"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
