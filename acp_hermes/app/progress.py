"""A one-line status on stderr while a command does something slow, for people at a terminal.

Only when stderr is a terminal: redirected output and scripts see nothing. The line is rewritten
in place and erased when the work ends, so what the command prints afterwards starts clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_ERASE = "\r\033[K"


@contextmanager
def progress(message: str) -> Iterator[Callable[[str], None]]:
    """Show ``message…`` for the ``with`` body; the yielded function replaces the text."""
    stream = sys.stderr
    shown = stream.isatty()

    def update(text: str) -> None:
        if shown:
            stream.write(f"{_ERASE}{text}…")
            stream.flush()

    update(message)
    try:
        yield update
    finally:
        if shown:
            stream.write(_ERASE)
            stream.flush()
