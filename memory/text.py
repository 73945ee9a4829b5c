"""Text helpers every layer shares (this is the bottom layer, so all of them can use it)."""

from __future__ import annotations


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace collapsed), cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def counted(count: int, word: str, plural: str | None = None) -> str:
    """``count`` with its noun written out ("1 file", "2 files", "3 entries" with ``plural``)."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"
