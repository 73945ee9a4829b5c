"""The progress line: drawn and erased on a terminal, absent otherwise."""

from __future__ import annotations

import io

import pytest

from acp_hermes.app.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_rewritten_then_erased(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress("reading 12 messages") as update:
        update("exporting 12 messages")
    assert terminal.getvalue() == "\r\033[Kreading 12 messages…\r\033[Kexporting 12 messages…\r\033[K"


def test_elsewhere_nothing_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with pytest.raises(RuntimeError), progress("working") as update:
        update("still working")
        raise RuntimeError("the work failed")
    assert pipe.getvalue() == ""
