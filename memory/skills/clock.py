"""The time skills' usage and lifecycle go by: the system clock, or a test's.

Testing hook: when the environment variable ``ACP_HERMES_TESTING_CLOCK_FILE`` names a file, the
number in it (seconds since the epoch) is the time, read again at each look; a test that needs a
skill to age 90 days writes a later number into the file instead of waiting (a server it started
goes by the file too). It exists for tests only and is documented nowhere else: a missing or
unreadable file is an error, so a stray setting cannot quietly stop the clock.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime, timezone

Clock = Callable[[], float]  # seconds since the epoch

TESTING_CLOCK_VARIABLE = "ACP_HERMES_TESTING_CLOCK_FILE"
DAY_SECONDS = 86_400.0


def system_clock() -> Clock:
    """``time.time``, unless the testing hook names a clock file (see the module docstring)."""
    path = os.environ.get(TESTING_CLOCK_VARIABLE)
    if not path:
        return time.time
    return lambda: _read_clock_file(path)


def _read_clock_file(path: str) -> float:
    with open(path, encoding="utf-8") as handle:
        return float(handle.read().strip())


def iso(moment: float) -> str:
    """``moment`` as Hermes writes times in the usage sidecar: ISO 8601 in UTC with its offset."""
    return datetime.fromtimestamp(moment, timezone.utc).isoformat()


def parse_iso(text: object) -> float | None:
    """A sidecar time back as seconds since the epoch; None when absent or not a time (a naive one is UTC)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
