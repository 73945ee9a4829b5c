"""The skills index at 1,000 skills: cold build, warm lookup, skills_list, and the "nothing changed" check.

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

Also printed, without a target: the rebuild after one SKILL.md changed (the other 999 parses
are reused). Figures are medians, with p90 and the best run; targets are checked on the median.
"""

from __future__ import annotations

import argparse
import asyncio
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
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import FileChange, ToolServices
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
    async def authorize_edits(self, ctx: ToolContext, changes: object) -> None: ...
    async def authorize_command(self, ctx: ToolContext, command: str, cwd: Path, **_: object) -> None: ...
    async def authorize_state(self, ctx: ToolContext, changes: list[FileChange]) -> None: ...
    async def authorize_read(self, ctx: ToolContext, paths: object, purpose: str = "file", **_: object) -> None: ...


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
