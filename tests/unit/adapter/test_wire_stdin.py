"""Which stdin the event loop can poll: anything else is read on a thread (adapter.wire)."""

from __future__ import annotations

import os
from pathlib import Path

from acp_hermes.adapter import wire


def test_pipes_are_polled_files_and_dev_null_are_not(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        assert wire._can_poll(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    plain = tmp_path / "requests.ndjson"
    plain.write_text("{}\n")
    for path in (plain, Path(os.devnull)):  # epoll refuses both (EPERM)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert not wire._can_poll(fd), path
        finally:
            os.close(fd)
