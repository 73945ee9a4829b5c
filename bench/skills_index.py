"""The skills index at 1,000 skills: cold build, warm lookup, skills_list, the "nothing changed" check,
the index with every skill's usage, and recording a use.

    .venv/bin/python bench/skills_index.py                # 1,000 skills, 30 runs of each
    .venv/bin/python bench/skills_index.py --skills 5000 --runs 50

A temporary ``skills`` folder gets 1,000 skills in Hermes's format: 40 categories plus some
uncategorized skills, each SKILL.md 2-4 KB with frontmatter like the skills Hermes ships
(version, platforms, ``metadata.hermes`` tags and related skills), one in twenty with a folded
(``>``) description that the quick frontmatter reader leaves to PyYAML, and a ``references/``
file in every fifth skill. Every mtime is then set an hour back: a store that has existed for a
while, whose mtimes the index may trust (a younger one makes every lookup rescan for a second,
``memory.skills.index.RACY_NS``).

Measured, in process, on files in the OS page cache (PyYAML imported beforehand; its first
import is printed separately):

* cold index: a new ``SkillStore`` builds its index (scan, read, parse every SKILL.md) - <= 50 ms
* warm index: ``skills()`` on a built store (the mtime check, then the cached tuple) - <= 5 ms
* skills_list: the tool called through ``ToolRegistry.dispatch`` on a warm store, result
  formatting, capping and the injection scan of its output included - <= 20 ms
* hint tracking per tool call, nothing new: ``SubdirectoryHintTracker.check_tool_call`` for a path
  in a directory already visited - <= 1 ms (the only per-tool-call cost: see the next line)
* nothing changed: ``unchanged()``, one stat per watched path (roots, categories, SKILL.md files).
  It runs once after each prompt and every 3 s for idle sessions, never per tool call, so it adds
  nothing to a tool call; its target is that of a per-prompt step - <= 5 ms
* cold index with usage: a new store's ``statuses()`` (the index, and the ``.usage.json`` sidecar
  Hermes's way: a record for every skill, half of them the agent's) - <= 50 ms
* warm index with usage: ``statuses()`` on a built store (the sidecar unchanged: one stat) - <= 5 ms
* recording a use: ``record_use`` as ``skill_view`` calls it, on the turn's path (a queue put; the
  worker thread writes the sidecar) - <= 1 ms. The write itself, off the turn's path, is printed
  without a target (one use recorded, then ``flush``).

Also printed, without a target: the rebuild after one SKILL.md changed (the other 999 parses
are reused). Figures are medians, with p90 and the best run; targets are checked on the median.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from acp_hermes_memory.skills import SkillStore
from acp_hermes_tools.context import Permit, ToolContext, ToolScope
from acp_hermes_tools.contracts import Request, ToolServices
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.registry import ToolCall, ToolRegistry
from acp_hermes_tools.skills import SKILL_TOOLS

WORDS = (
    "deploy", "build", "test", "review", "release", "rollback", "migrate", "debug", "profile", "trace",
    "index", "cache", "queue", "worker", "container", "cluster", "service", "endpoint", "schema", "backup",
    "restore", "rotate", "audit", "lint", "format", "bundle", "publish", "monitor", "alert", "incident",
    "triage", "benchmark", "snapshot", "replica", "shard", "vault", "secret", "token", "webhook", "cron",
)


@dataclass(frozen=True)
class Figures:
    median: float
    p90: float
    best: float

    @classmethod
    def of(cls, samples: list[float]) -> Figures:
        ordered = sorted(samples)
        return cls(statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))], ordered[0])

    def __str__(self) -> str:
        return f"median {self.median:7.3f} ms   p90 {self.p90:7.3f} ms   best {self.best:7.3f} ms"


@dataclass(frozen=True, slots=True)
class _Services(ToolServices):
    skills: SkillStore | None = None


class _AllowAll:
    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        return Permit()


class _Sink:
    async def emit(self, event: object) -> None: ...


def skill_text(name: str, rng: random.Random, folded: bool) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    description = f"{name.replace('-', ' ').capitalize()} - {words}. Use when the user asks to {rng.choice(WORDS)}."
    described = f"description: >\n  {description}\n" if folded else f"description: {description}\n"
    tags = ", ".join(rng.sample(WORDS, 3))
    related = ", ".join(f"skill-{rng.randrange(1000):04d}" for _ in range(2))
    steps = "\n".join(
        f"{step}. {' '.join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))}." for step in range(1, 25)
    )
    return (
        f"---\nname: {name}\n{described}version: 1.{rng.randrange(9)}.0\nlicense: MIT\n"
        f"platforms: [linux, macos, windows]\nmetadata:\n  hermes:\n    tags: [{tags}]\n"
        f"    related_skills: [{related}]\n---\n# {name}\n\n## When to use\n\n{description}\n\n## Steps\n\n{steps}\n"
    )


def populate(root: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    categories = [f"{rng.choice(WORDS)}-{index:02d}" for index in range(40)]
    for index in range(count):
        name = f"skill-{index:04d}"
        category = None if index % 25 == 0 else categories[index % len(categories)]
        skill_dir = root / category / name if category else root / name
        skill_dir.mkdir(parents=True)
        (skill_dir / "SKILL.md").write_text(skill_text(name, rng, folded=index % 20 == 7), encoding="utf-8")
        if index % 5 == 0:
            (skill_dir / "references").mkdir()
            (skill_dir / "references" / "notes.md").write_text("Notes.\n" * 50, encoding="utf-8")
    an_hour_ago = time.time() - 3600
    for directory, _, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(directory, name), (an_hour_ago, an_hour_ago))


def write_usage(root: Path, count: int, seed: int) -> None:
    """A Hermes-shaped sidecar: a record for each skill, half created by the agent, some used."""
    rng = random.Random(seed)
    moment = "2026-10-01T12:00:00+00:00"
    records = {f"skill-{index:04d}": {
        "use_count": rng.randrange(20), "view_count": rng.randrange(40), "patch_count": rng.randrange(3),
        "last_used_at": moment, "last_viewed_at": moment, "last_patched_at": None, "created_at": moment,
        "state": "stale" if index % 17 == 0 else "active", "pinned": index % 50 == 0, "archived_at": None,
        "created_by": "agent" if index % 2 else "user"} for index in range(count)}
    (root / ".usage.json").write_text(json.dumps(records, indent=2, sort_keys=True), encoding="utf-8")


def cold_statuses(root: Path) -> object:
    """A new store's ``statuses()`` with nothing cached: the sidecar is read and parsed again too (a
    process's stores share one sidecar reader, which keeps what it parsed while the file is the same)."""
    store = SkillStore(root, platform="linux")
    store.usage.file._cached = None
    return store.statuses()


def timed(action: Callable[[], object], runs: int) -> Figures:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return Figures.of(samples)


async def timed_list(store: SkillStore, cwd: Path, runs: int) -> tuple[Figures, int]:
    registry = ToolRegistry(SKILL_TOOLS)
    registry.prepare()
    scope = ToolScope("bench", cwd, (cwd,), services=_Services(skills=store))
    samples, size = [], 0
    for run in range(runs):
        ctx = ToolContext(f"call-{run}", scope, LocalEditor(), _AllowAll(), _Sink())  # type: ignore[arg-type]
        start = time.perf_counter()
        result = await registry.dispatch(ToolCall(f"call-{run}", "skills_list", {}), ctx)
        samples.append((time.perf_counter() - start) * 1000)
        assert result.ok, result.text
        size = len(result.text)
    return Figures.of(samples), size


def touch_one(store: SkillStore, root: Path, rng: random.Random) -> Callable[[], object]:
    """An action that rewrites one SKILL.md (an hour-old mtime, one second newer each time), then lists."""
    skills = [info for info in store.skills()]
    stamp = [time.time() - 3600]

    def action() -> object:
        info = rng.choice(skills)
        info.skill_file.write_text(skill_text(info.name, rng, folded=False), encoding="utf-8")
        stamp[0] += 1
        os.utime(info.skill_file, (stamp[0], stamp[0]))
        return store.skills()

    return action


def hint_check(workspace: Path) -> Callable[[], object]:
    """One tool call's hint check for a file in a directory the session has already visited."""
    from acp_hermes.core.hints import SubdirectoryHintTracker

    (workspace / "src" / "api").mkdir(parents=True)
    (workspace / "src" / "api" / "AGENTS.md").write_text("API rules.\n")
    tracker = SubdirectoryHintTracker(workspace)
    tracker.check_tool_call("read_file", {"path": "src/api/routes.py"})  # visits src/ and src/api/
    return lambda: tracker.check_tool_call("read_file", {"path": "src/api/handlers.py"})


def run(args: argparse.Namespace) -> int:
    report: list[tuple[str, bool]] = []

    def check(label: str, figures: Figures, target: float) -> None:
        print(f"{label:<28}{figures}   (target <= {target:g} ms)")
        report.append((f"{label} median {figures.median:.3f} ms <= {target:g} ms", figures.median <= target))

    with tempfile.TemporaryDirectory(prefix="skills-bench-") as temp:
        root = Path(temp) / "skills"
        populate(root, args.skills, args.seed)
        start = time.perf_counter()
        import yaml  # noqa: F401 - timed: the first skill with unusual frontmatter pays it once

        print(f"{args.skills:,} skills in {root}; PyYAML import {(time.perf_counter() - start) * 1000:.1f} ms")
        store = SkillStore(root, platform="linux")
        assert len(store.skills()) == args.skills

        check("cold index", timed(lambda: SkillStore(root, platform="linux").skills(), args.runs), 50)
        check("warm index", timed(store.skills, args.runs * 10), 5)
        listing, size = asyncio.run(timed_list(store, Path(temp), args.runs))
        check("skills_list (dispatch)", listing, 20)
        check("hint tracking per tool call", timed(hint_check(Path(temp)), args.runs * 10), 1)
        check("nothing changed check", timed(store.unchanged, args.runs * 10), 5)
        write_usage(root, args.skills, args.seed)
        check("cold index with usage", timed(lambda: cold_statuses(root), args.runs), 50)
        assert len(store.statuses()) == args.skills
        check("warm index with usage", timed(store.statuses, args.runs * 10), 5)
        info = store.find("skill-0001")
        check("recording a use", timed(lambda: store.record_use(info), args.runs * 10), 1)
        assert store.usage.flush(60)
        write = timed(lambda: (store.record_use(info), store.usage.flush(60)), args.runs)
        print(f"{'sidecar write (off path)':<28}{write}   (one use recorded, then written by the worker)")
        rebuild = timed(touch_one(store, root, random.Random(args.seed)), args.runs)
        print(f"{'rebuild after one edit':<28}{rebuild}   (one SKILL.md written and re-parsed, the rest reused)")
        print(f"skills_list result: {size:,} characters")

    print()
    for label, ok in report:
        print(f"  [{'ok' if ok else 'MISSED'}] {label}")
    return 0 if all(ok for _, ok in report) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
