"""Text helpers every layer shares (this is the bottom layer, so all of them can use it)."""

from __future__ import annotations

import codecs

SNIFF_BYTES = 8192  # how much of a file decides whether it is text
# Control characters text does not hold (NUL is found before), and the mark of a byte that is not UTF-8.
_ODD = {code: None for code in (*range(32), 0xFFFD) if chr(code) not in "\n\r\t\f\b\x1b"}
_MARKDOWN = r"([\\`*_\[\]<>&~|!#])"  # what starts or ends Markdown inline syntax (compiled when first used)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace collapsed), cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def markdown_line(text: str, limit: int) -> str:
    """``text`` as one line of literal Markdown text (a title from the web, shown in a card): whitespace and
    line breaks of every kind collapsed, control and format characters dropped, cut to ``limit``, and every
    character Markdown would read as syntax escaped with a backslash, so nothing in it becomes a link,
    an image, emphasis, HTML or a new line of its own."""
    import re
    import unicodedata

    visible = "".join(char for char in text if char.isspace() or unicodedata.category(char) not in ("Cc", "Cf"))
    return re.sub(_MARKDOWN, r"\\\1", one_line(visible, limit))


def counted(count: int, word: str, plural: str | None = None) -> str:
    """``count`` with its noun written out ("1 file", "2 files", "3 entries" with ``plural``)."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def looks_binary(data: bytes) -> bool:
    """Whether ``data`` (a file's bytes: its first ``SNIFF_BYTES`` decide) is not text: a NUL byte in it, or
    more than a tenth of it bytes that are not UTF-8 or control characters. The one sniffer: whatever reads
    a file as text for the model or the user (read_file, search, attachments, skill files, rollback's
    diffs) asks it."""
    sample = data[:SNIFF_BYTES]
    if b"\0" in sample:
        return True
    # Incremental: a character cut off at the end of the sample is not counted as a byte that is not UTF-8.
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(sample, final=False)
    if not text:
        return False
    return (len(text) - len(text.translate(_ODD))) / len(text) > 0.1
