"""A SessionDB in a fresh file for each test of the stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_memory.session_db import SessionDB


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "acp-hermes" / "state.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path) as database:
        yield database
