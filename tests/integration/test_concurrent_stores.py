"""Stores that several agent processes share lose nothing when they write at once: each worker is
a freshly spawned interpreter (which is why these live in the integration tier)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import TYPE_CHECKING

from acp_hermes_memory.skills.clock import system_clock
from acp_hermes_memory.skills.usage import UsageFile, UsageRecorder
from acp_hermes_memory.store import ENTRY_DELIMITER, MemoryStore

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier


def _add_entries(memories_dir: str, worker: int, count: int, barrier: Barrier) -> None:
    store = MemoryStore(Path(memories_dir), memory_limit=1_000_000)
    barrier.wait()
    for number in range(count):
        store.apply("add", "memory", content=f"worker {worker} fact {number}")


def test_concurrent_processes_lose_no_entries(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers, count = 4, 25
    barrier = context.Barrier(workers)
    processes = [
        context.Process(target=_add_entries, args=(str(tmp_path), worker, count, barrier)) for worker in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0] * workers
    expected = {f"worker {w} fact {n}" for w in range(workers) for n in range(count)}
    entries = (tmp_path / "MEMORY.md").read_text().split(ENTRY_DELIMITER)
    assert len(entries) == workers * count
    assert set(entries) == expected


def _bump_many(path: str, lock: str, count: int) -> None:
    recorder = UsageRecorder(UsageFile(Path(path), Path(lock)), system_clock())
    for _ in range(count):
        recorder.record("shared", "use", "user")
    assert recorder.flush()


def test_concurrent_processes_lose_no_count(tmp_path: Path) -> None:
    path, lock = tmp_path / "skills" / ".usage.json", tmp_path / "skills.lock"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_bump_many, args=(str(path), str(lock), 40)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0, 0]
    assert json.loads(path.read_text())["shared"]["use_count"] == 120
