"""The checkpoint store: snapshot latency, a fresh workspace's first snapshot, a restore, store growth.

    .venv/bin/python bench/checkpoints.py                  # 200 snapshots, 3 first snapshots, 20 restores
    .venv/bin/python bench/checkpoints.py --snapshots 500 --restores 50

Workspaces are generated in a temporary folder: source-like text files of 1-8 KB spread over
nested folders (a few hundred of them), a ``.gitignore`` that leaves out a ``build/`` folder full of
files, each file's mtime an hour back (a tree that existed before the session). Measured, with
``CheckpointStore`` called directly (the real git, no mocks):

* snapshot: a 2,000-file workspace, 10 files rewritten (new content) before each snapshot; only
  ``snapshot()`` is timed - p50 <= 30 ms, p99 <= 100 ms. The processes it started are counted too
  (``subprocess.Popen`` is wrapped in this process; every git the store runs goes through it).
* first snapshot: a fresh 10,000-file workspace and an empty store, each run in new folders -
  every run <= 2 s.
* restore: snapshot, rewrite 90 files, delete 5 and add 5, snapshot, then ``restore()`` the 100
  paths back to the first snapshot (as ``/rollback`` does: ``changes()`` picks them); the restore
  alone is timed, then checked - p50 and max <= 500 ms.
* growth: ``size_bytes()`` (disk blocks) of a 2,000-file workspace's store after its first snapshot
  and after 100 more, each changing one line of one of twenty 10 KB files; the store packs itself
  as it goes, no ``prune()`` - growth <= 2 MB. The size after a ``prune()`` is printed too.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from stats import percentile

from acp_hermes_tools.checkpoints import CheckpointStore

TARGET_SNAPSHOT_P50_MS = 30.0
TARGET_SNAPSHOT_P99_MS = 100.0
TARGET_FIRST_SNAPSHOT_S = 2.0
TARGET_RESTORE_MS = 500.0
TARGET_GROWTH_BYTES = 2 * 1024 * 1024
WORDS = ("def", "return", "self", "value", "index", "result", "import", "class", "for", "in", "if", "None",
         "config", "path", "items", "await", "async", "raise", "error", "data", "update", "request")


def text(rng: random.Random, size: int) -> str:
    lines = []
    total = 0
    while total < size:
        line = "    " * rng.randrange(3) + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size] + "\n"


def populate(root: Path, count: int, seed: int) -> list[Path]:
    """``count`` tracked files in nested folders, plus an ignored build folder; their paths."""
    rng = random.Random(seed)
    folders = [Path(f"pkg{a}/mod{b}") for a in range(max(1, count // 200)) for b in range(10)]
    files = []
    for index in range(count):
        path = root / folders[index % len(folders)] / f"file_{index:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text(rng, rng.randint(1_000, 8_000)))
        files.append(path)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build").mkdir()
    for index in range(200):
        (root / "build" / f"out_{index}.o").write_bytes(os.urandom(2_000))
    past = time.time() - 3600
    for path in files:
        os.utime(path, (past, past))
    return files


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def new_store(scratch: Path, name: str, count: int, seed: int) -> tuple[CheckpointStore, list[Path]]:
    workspace = scratch / name
    workspace.mkdir()
    files = populate(workspace, count, seed)
    return CheckpointStore.for_workspace(scratch / "home", workspace), files


class CountingPopen(subprocess.Popen):
    """``subprocess.Popen`` that counts the processes started (``subprocess.run`` goes through it too)."""

    started = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        CountingPopen.started += 1
        super().__init__(*args, **kwargs)


def measure_snapshots(scratch: Path, runs: int) -> tuple[list[float], float]:
    """Latencies, and the git processes per snapshot (compactions included)."""
    store, files = new_store(scratch, "snapshots", 2_000, 1)
    rng = random.Random(2)
    store.snapshot("refs/checkpoints/bench/0000", {"kind": "turn"})
    samples = []
    started = CountingPopen.started
    for run in range(1, runs + 1):
        for path in rng.sample(files, 10):
            path.write_text(text(rng, rng.randint(1_000, 8_000)))
        samples.append(timed(partial(store.snapshot, f"refs/checkpoints/bench/{run:04d}", {"kind": "turn"})))
    return samples, (CountingPopen.started - started) / runs


def measure_first_snapshots(scratch: Path, runs: int) -> list[float]:
    samples = []
    for run in range(runs):
        store, _ = new_store(scratch, f"fresh{run}", 10_000, 10 + run)
        samples.append(timed(partial(store.snapshot, "refs/checkpoints/bench/0001", {})) / 1000)
    return samples


def measure_restores(scratch: Path, runs: int) -> list[float]:
    store, files = new_store(scratch, "restores", 2_000, 3)
    rng = random.Random(4)
    samples = []
    for run in range(runs):
        before = store.snapshot(f"refs/checkpoints/bench/{run:04d}", {})
        chosen = rng.sample(files, 95)
        expected = {path: path.read_bytes() for path in chosen}
        for path in chosen[:90]:
            path.write_text(text(rng, rng.randint(1_000, 8_000)))
        for path in chosen[90:]:
            path.unlink()
        added = [path.with_name(f"new_{run}_{n}.py") for n, path in enumerate(chosen[:5])]
        for path in added:
            path.write_text(text(rng, 2_000))
        after = store.snapshot(f"refs/checkpoints/bench/{run:04d}-end", {})
        back = {path: old for path, (old, _) in store.changes(before.commit, after.commit).items()}
        assert len(back) == 100, len(back)
        samples.append(timed(partial(store.restore, back)))
        assert all(path.read_bytes() == content for path, content in expected.items())
        assert not any(path.exists() for path in added)
    return samples


def measure_growth(scratch: Path) -> tuple[int, int, int]:
    store, files = new_store(scratch, "growth", 2_000, 5)
    rng = random.Random(6)
    tens = files[:20]
    for path in tens:
        path.write_text(text(rng, 10_240))
    store.snapshot("refs/checkpoints/bench/0000", {"kind": "turn"})
    start = store.size_bytes()
    for run in range(1, 101):
        path = rng.choice(tens)
        lines = path.read_text().splitlines(keepends=True)
        lines[rng.randrange(len(lines))] = text(rng, 60)
        path.write_text("".join(lines))
        store.snapshot(f"refs/checkpoints/bench/{run:04d}", {"kind": "turn"})
    grown = store.size_bytes()
    store.prune(keep=1_000, max_age_seconds=1e9)
    store.prune(keep=100, max_age_seconds=1e9)  # drops the first: repacks everything
    return start, grown, store.size_bytes()


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    results: list[tuple[str, bool]] = []
    try:
        snapshots, processes = measure_snapshots(scratch, args.snapshots)
        p50, p99 = percentile(snapshots, 0.50), percentile(snapshots, 0.99)
        print(f"snapshot, 2,000 files, 10 changed   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
              f"max {max(snapshots):6.1f} ms   ({len(snapshots)} snapshots; target p50 <= {TARGET_SNAPSHOT_P50_MS:g}, "
              f"p99 <= {TARGET_SNAPSHOT_P99_MS:g}); {processes:.2f} git processes per snapshot")
        results += [("snapshot p50", p50 <= TARGET_SNAPSHOT_P50_MS), ("snapshot p99", p99 <= TARGET_SNAPSHOT_P99_MS)]

        firsts = measure_first_snapshots(scratch, args.first)
        figures = ", ".join(f"{seconds:.2f}" for seconds in firsts)
        print(f"first snapshot, 10,000 files        {figures} s   (target each <= {TARGET_FIRST_SNAPSHOT_S:g} s)")
        results.append(("first snapshot", max(firsts) <= TARGET_FIRST_SNAPSHOT_S))

        restores = measure_restores(scratch, args.restores)
        p50 = percentile(restores, 0.50)
        print(f"restore of 100 files                p50 {p50:6.1f} ms   max {max(restores):6.1f} ms"
              f"   ({len(restores)} restores; target <= {TARGET_RESTORE_MS:g})")
        results.append(("restore", max(restores) <= TARGET_RESTORE_MS))

        start, grown, pruned = measure_growth(scratch)
        growth = grown - start
        print(f"store growth, 100 snapshots         {growth / 1024:6.0f} KB   (store {start / 1024:,.0f} KB after "
              f"the first, {grown / 1024:,.0f} KB after 100, {pruned / 1024:,.0f} KB pruned; target <= 2,048 KB)")
        results.append(("growth", growth <= TARGET_GROWTH_BYTES))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    for label, ok in results:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")
    return 0 if all(ok for _, ok in results) else 1


def main() -> int:
    subprocess.Popen = CountingPopen  # type: ignore[misc]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots", type=int, default=200, help="timed snapshots (default 200)")
    parser.add_argument("--first", type=int, default=3, help="fresh 10,000-file workspaces (default 3)")
    parser.add_argument("--restores", type=int, default=20, help="timed restores (default 20)")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
