"""What a prompt's turn tells whoever sent it, beyond its stop reason: the limit that ended it, and
the files it changed (asked for only by an editor that wants them).

The adapter opens a ``TurnReport`` around one prompt (``watching``); the turn fills it in as it
ends (``current``). A context variable carries it, as the prompt runs in the task that awaits it; the
report itself is a plain object, so a turn run in a copied context fills in the same one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_hermes.core.quotas import QuotaExceeded


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class TurnReport:
    """Filled in by the turn of one prompt."""

    __slots__ = ("changed", "exceeded", "ran", "wants_files")

    def __init__(self, wants_files: bool = False, exceeded: QuotaExceeded | None = None,
                 changed: tuple[str, ...] | None = None, ran: bool = False) -> None:
        self.wants_files = wants_files  # compute ``changed`` (a diff of the turn's checkpoints: git runs)
        self.exceeded = exceeded  # a limit ended the turn (or refused the prompt)
        self.changed = changed  # absolute paths the turn changed; None: not known (no checkpoints)
        self.ran = ran  # a model turn ran (a slash command's answer has nothing to report)


_CURRENT: contextvars.ContextVar[TurnReport | None] = contextvars.ContextVar("turn_report", default=None)


@contextmanager
def watching(report: TurnReport) -> Iterator[TurnReport]:
    token = _CURRENT.set(report)
    try:
        yield report
    finally:
        _CURRENT.reset(token)


def current() -> TurnReport | None:
    """The report of the prompt being handled, if its sender asked for one."""
    return _CURRENT.get()
