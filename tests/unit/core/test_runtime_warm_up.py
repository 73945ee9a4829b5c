"""The warm-up says when the model SDK is in: the server turns its cyclic GC on then (``app.cli.serve``)."""

from __future__ import annotations

import threading
from pathlib import Path

from acp_hermes.config import Paths, Settings
from acp_hermes.core.runtime import Runtime


class _Provider:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen
        self.responding = threading.Event()
        self.responding.set()  # the first response's output was handled: the second step goes on at once

    def prepare(self) -> None:
        self.seen.append("model client")

    def remember_imports(self) -> None:
        self.seen.append("import index saved")


class _Registry:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def prepare(self) -> None:
        self.seen.append("validators")


def test_the_warm_up_says_when_its_first_step_is_done(tmp_path: Path) -> None:
    seen: list[str] = []
    runtime = Runtime(Settings(sandbox="off"), Paths(tmp_path), warmed=lambda: seen.append("warmed"))
    runtime._provider = _Provider(seen)  # type: ignore[assignment]
    runtime._registry = _Registry(seen)  # type: ignore[assignment]
    runtime.warm_up()
    # The import index is saved last: by then what a turn imports is imported.
    assert seen == ["model client", "warmed", "validators", "import index saved"]



class _FirstResponse(threading.Event):
    """Already set (the first response came); says when something waits for it."""

    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.set()
        self.seen = seen

    def wait(self, timeout: float | None = None) -> bool:
        self.seen.append("waited for the first response")
        return super().wait(timeout)


def test_checkpoint_upkeep_waits_for_the_first_response(tmp_path: Path) -> None:
    seen: list[str] = []
    runtime = Runtime(Settings(sandbox="off"), Paths(tmp_path), warmed=lambda: None)
    provider = _Provider(seen)
    provider.responding = _FirstResponse(seen)
    runtime._provider = provider  # type: ignore[assignment]
    runtime.tend_checkpoints()
    assert seen == ["waited for the first response"]
