"""The text helpers every layer shares."""

from __future__ import annotations

import pytest

from acp_hermes_memory.text import counted, one_line


@pytest.mark.parametrize(("count", "shown"), [(0, "0 files"), (1, "1 file"), (2, "2 files"), (1234, "1,234 files")])
def test_counts_are_written_out_with_their_plural(count: int, shown: str) -> None:
    assert counted(count, "file") == shown


def test_an_irregular_plural_is_given() -> None:
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


def test_one_line_collapses_and_cuts() -> None:
    assert one_line("a\n  b\tc", 80) == "a b c" and one_line("abcdef", 4) == "abc…"
