"""The text helpers every layer shares: one line, one line of literal Markdown, counts with their nouns,
whether a file's bytes are text."""

from __future__ import annotations

import pytest

from acp_hermes_memory.text import SNIFF_BYTES, counted, looks_binary, markdown_line, one_line


def test_one_line_collapses_whitespace_and_cuts_with_an_ellipsis() -> None:
    assert one_line("a\n  b\tc", 10) == "a b c"
    assert one_line("abcdef ghij", 8) == "abcdef…"


@pytest.mark.parametrize(("text", "shown"), [
    ("[click](javascript:alert(1))", "\\[click\\](javascript:alert(1))"),
    ("![img](https://x/y.png)", "\\!\\[img\\](https://x/y.png)"),
    ("**bold** _it_ ~~gone~~ `code`", "\\*\\*bold\\*\\* \\_it\\_ \\~\\~gone\\~\\~ \\`code\\`"),
    ("<b>html</b> &amp; <https://x>", "\\<b\\>html\\</b\\> \\&amp; \\<https://x\\>"),
    ("title\n# heading\r\n- item\u2028| a | b |\u0085end", "title \\# heading - item \\| a \\| b \\| end"),
    ("back\\slash", "back\\\\slash"),
    ("zero\u200bwidth \u202ereversed\x00", "zerowidth reversed"),
    ("Plain title: v1.2 (stable)", "Plain title: v1.2 (stable)"),
])
def test_markdown_line_shows_text_literally_on_one_line(text: str, shown: str) -> None:
    assert markdown_line(text, 200) == shown


def test_markdown_line_is_cut_before_it_is_escaped() -> None:
    assert markdown_line("*" * 10, 5) == "\\*\\*\\*\\*…"


@pytest.mark.parametrize(("count", "shown"), [(0, "0 files"), (1, "1 file"), (2, "2 files"), (1234, "1,234 files")])
def test_counts_are_written_out_with_their_plural(count: int, shown: str) -> None:
    assert counted(count, "file") == shown


def test_an_irregular_plural_is_given() -> None:
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


def test_one_line_collapses_and_cuts() -> None:
    assert one_line("a\n  b\tc", 80) == "a b c" and one_line("abcdef", 4) == "abc…"


@pytest.mark.parametrize(("data", "binary"), [
    (b"", False),
    (b"plain text\n\twith a tab\r\n", False),
    ("caf\u00e9 na\u00efve \u2014 \U0001f600\n".encode(), False),
    (b"\x1b[31mred\x1b[0m and a form feed \f", False),  # terminal colours and page breaks are text
    (b"PNG\x00\x01\x02 some text after the NUL", True),
    (b"caf\xe9 in Latin-1, one odd byte among many letters", False),
    (bytes(range(1, 32)) * 4, True),  # control characters throughout
    (b"\xff\xfe\xfd" * 100, True),  # no UTF-8 at all
    (b"a" * SNIFF_BYTES + b"\x00", False),  # only the first SNIFF_BYTES decide
])
def test_looks_binary_is_a_nul_or_mostly_bytes_text_does_not_hold(data: bytes, binary: bool) -> None:
    assert looks_binary(data) is binary
