"""Skills' usage, history, lifecycle and archive on real folders, with a clock the test sets."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from acp_hermes_memory.skills import FileRestore, SkillError, SkillStore
from acp_hermes_memory.skills.clock import iso, parse_iso, system_clock
from acp_hermes_memory.skills.lifecycle import plan, prune, run_daily
from acp_hermes_memory.skills.usage import UsageFile, UsageRecorder, usage_of
from tests.support.skills import put

DAY = 86_400.0
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def skill_md(name: str, description: str = "Does a thing.", body: str = "Step one.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hermes-home"


def make_store(home: Path, clock: Clock, **kwargs: object) -> SkillStore:
    return SkillStore(home / "skills", platform="linux", history=home / "acp-hermes" / "history.jsonl",
                      clock=clock, **kwargs)  # type: ignore[arg-type]


def sidecar(home: Path) -> dict[str, dict[str, object]]:
    loaded: dict[str, dict[str, object]] = json.loads((home / "skills" / ".usage.json").read_text())
    return loaded


# -- the sidecar


def test_a_create_starts_an_agent_record_in_hermes_shape_and_a_patch_counts(home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("rotate-logs", skill_md("rotate-logs"), "ops")
    clock.now += DAY
    store.patch("rotate-logs", "Step one.", "Step two.")
    record = sidecar(home)["rotate-logs"]
    assert record["created_by"] == "agent" and record["created_at"] == iso(T0)
    assert (record["patch_count"], record["last_patched_at"], record["state"]) == (1, iso(T0 + DAY), "active")
    assert set(record) >= {"use_count", "view_count", "last_used_at", "last_viewed_at", "pinned", "archived_at"}
    assert stat.S_IMODE((home / "skills" / ".usage.json").stat().st_mode) == 0o600
    store.delete("rotate-logs")
    assert "rotate-logs" not in sidecar(home)  # a deleted skill's record goes: a later one of its name is new


def test_a_skill_the_user_wrote_is_recorded_as_theirs_and_the_curator_may_not_change_it(home: Path,
                                                                                        clock: Clock) -> None:
    put(home / "skills", "mine/SKILL.md", skill_md("mine"))
    store = make_store(home, clock)
    store.record_use(store.find("mine"), "view")
    assert store.usage.flush()
    assert sidecar(home)["mine"]["created_by"] == "user" and sidecar(home)["mine"]["view_count"] == 1
    with pytest.raises(SkillError, match="not a skill the agent created"):
        store.with_author("curator").patch("mine", "Step one.", "Other.")
    store.create("theirs", skill_md("theirs"))
    store.with_author("curator").patch("theirs", "Step one.", "Step two.")
    assert store.history is not None and store.history.entries("theirs")[-1].by == "curator"


def test_unknown_keys_are_kept_and_a_damaged_file_is_left_alone(home: Path, clock: Clock) -> None:
    put(home / "skills", "mine/SKILL.md", skill_md("mine"))
    usage_file = home / "skills" / ".usage.json"
    usage_file.write_text(json.dumps({"mine": {"view_count": 3, "negative_claims": [{"id": "x"}]}}))
    store = make_store(home, clock)
    store.record_use(store.find("mine"), "view")
    store.usage.flush()
    assert sidecar(home)["mine"]["view_count"] == 4 and sidecar(home)["mine"]["negative_claims"] == [{"id": "x"}]
    usage_file.write_text("{not json")
    store.record_use(store.find("mine"), "view")
    store.usage.flush()
    assert usage_file.read_text() == "{not json"  # perhaps Hermes's, mid-write: never replaced by ours


def test_recording_never_waits_for_the_write(tmp_path: Path) -> None:
    """While another process holds the store's lock, a record still returns at once; the flush waits."""
    from acp_hermes_memory.fs import exclusive_lock

    lock = tmp_path / "skills.lock"
    recorder = UsageRecorder(UsageFile(tmp_path / "skills" / ".usage.json", lock), system_clock())
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with exclusive_lock(lock):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(30)
    recorder.record("x", "view", "user")  # returns although the write cannot happen yet
    assert not recorder.flush(timeout=0.05)
    release.set()
    holder.join()
    assert recorder.flush()
    assert usage_of(json.loads((tmp_path / "skills" / ".usage.json").read_text())["x"]).view_count == 1


def test_times_read_back_as_written_and_a_naive_time_is_utc() -> None:
    assert parse_iso(iso(T0)) == T0
    assert parse_iso("2027-01-15T08:00:00") == T0 and parse_iso("yesterday") is None and parse_iso(None) is None


# -- the lifecycle


def test_only_unpinned_agent_skills_age_stale_then_archived_and_the_plan_is_deterministic(
        home: Path, clock: Clock) -> None:
    put(home / "skills", "mine/SKILL.md", skill_md("mine"))
    put(home / "team-skills", "shared/SKILL.md", skill_md("shared"))
    put(home / "project-skills", "local/SKILL.md", skill_md("local"))
    store = make_store(home, clock, external=[home / "team-skills"], project=[home / "project-skills"])
    store.create("old", skill_md("old"))
    store.create("kept", skill_md("kept"))
    store.set_pinned("kept", True)
    os.utime(home / "skills" / "mine" / "SKILL.md", (T0 - 400 * DAY, T0 - 400 * DAY))
    for name in ("mine", "shared", "local"):
        store.record_use(store.find(name), "view")
    store.usage.flush()

    clock.now = T0 + 45 * DAY
    moves = plan(store.statuses(), clock.now, 30, 90)
    assert [(m.name, m.to, m.idle_days) for m in moves] == [("old", "stale", 45)]
    assert plan(store.statuses(), clock.now, 30, 90) == moves
    state = home / "acp-hermes" / "upkeep.json"
    outcome = run_daily(store, state, 30, 90)
    assert outcome is not None and outcome.stale == ("old",)
    assert run_daily(store, state, 30, 90) is None  # at most once a day
    assert {s.info.name: s.state for s in store.statuses()} == {
        "kept": "active", "local": "active", "mine": "active", "old": "stale", "shared": "active"}

    clock.now = T0 + 91 * DAY
    outcome = run_daily(store, state, 30, 90)
    assert outcome is not None and outcome.archived == ("old",)
    assert "1 skill archived (unused for 90 days): `old` — `/skills restore NAME`" in outcome.announcement(30, 90)
    assert [s.info.name for s in store.statuses()] == ["kept", "local", "mine", "shared"]
    assert [a.name for a in store.archived()] == ["old"] and (home / "skills" / ".archive" / "old").is_dir()


def test_a_view_makes_a_stale_skill_active_again(home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("old", skill_md("old"))
    clock.now += 40 * DAY
    run_daily(store, home / "state.json", 30, 90)
    assert store.statuses()[0].state == "stale"
    store.record_use(store.find("old"), "view")
    store.usage.flush()
    assert store.statuses()[0].state == "active"
    assert plan(store.statuses(), clock.now, 30, 90) == []


def test_archive_and_restore_keep_the_category_and_a_second_archive_gets_its_own_folder(
        home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("deploy", skill_md("deploy", body="First."), "ops")
    store.archive("deploy")
    with pytest.raises(SkillError, match="archived: restore it first"):
        store.set_pinned("deploy", True)
    assert store.restorable("deploy") == (home / "skills" / "ops" / "deploy" / "SKILL.md",
                                          skill_md("deploy", body="First."))
    clock.now += DAY
    store.create("deploy", skill_md("deploy", body="Second."))
    store.archive("deploy")
    archives = sorted(p.name for p in (home / "skills" / ".archive").iterdir())
    assert archives[0] == "deploy" and archives[1].startswith("deploy-2027")
    restored = store.restore("deploy")  # the newest archive
    assert restored == home / "skills" / "deploy" and "Second." in (restored / "SKILL.md").read_text()
    with pytest.raises(SkillError, match="is listed already"):
        store.restore("deploy")
    record = sidecar(home)["deploy"]
    assert (record["state"], record["restored_at"], record["archived_at"]) == ("active", iso(clock.now), None)
    assert store.history is not None
    assert [e.action for e in store.history.entries("deploy")] == [
        "create", "archive", "create", "archive", "restore"]


def test_prune_archives_agent_skills_unused_for_the_days_given_and_a_dry_run_moves_nothing(
        home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("a", skill_md("a"))
    clock.now += 10 * DAY
    store.create("b", skill_md("b"))
    clock.now += 5 * DAY
    assert [(m.name, m.idle_days) for m in prune(store, 7, dry_run=True)] == [("a", 15)]
    assert [s.info.name for s in store.statuses()] == ["a", "b"]
    assert [m.name for m in prune(store.with_author("user"), 7)] == ["a"]
    assert [s.info.name for s in store.statuses()] == ["b"]
    assert store.history is not None and store.history.entries("a")[-1].by == "user"


# -- the history


def test_every_change_is_recorded_and_a_rollback_restores_a_version_and_is_recorded(home: Path,
                                                                                    clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("deploy", skill_md("deploy"))
    store.write_file("deploy", "references/hosts.md", "staging\n")
    store.with_author("review").apply(store.prepare_patch("deploy", "Step one.", "Step 1."), session="s-1")
    assert store.history is not None
    entries = store.history.entries("deploy")
    assert [(e.action, e.by, e.session) for e in entries] == [
        ("create", "agent", None), ("write_file", "agent", None), ("patch", "review", "s-1")]
    assert entries[2].files[0].old is not None and "Step one." in entries[2].files[0].old
    assert stat.S_IMODE((home / "acp-hermes" / "history.jsonl").stat().st_mode) == 0o600

    store.rollback("deploy", 1)  # as the create left it: no references/ file, the first text
    folder = home / "skills" / "deploy"
    assert "Step one." in (folder / "SKILL.md").read_text() and not (folder / "references").exists()
    assert store.history.entries("deploy")[-1].action == "rollback"
    store.rollback("deploy")  # the rollback itself undone: back to version 3
    assert "Step 1." in (folder / "SKILL.md").read_text() and (folder / "references" / "hosts.md").is_file()
    with pytest.raises(SkillError, match="versions 0 to 5"):
        store.rollback("deploy", 6)


def test_a_deleted_skill_comes_back_whole_and_as_the_agents(home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("deploy", skill_md("deploy"), "ops")
    store.write_file("deploy", "scripts/run.sh", "echo hi\n")
    store.delete("deploy")
    assert store.history is not None
    deleted = store.history.entries("deploy")[-1]
    assert sorted(f.path for f in deleted.files) == ["SKILL.md", "scripts/run.sh"]
    store.rollback("deploy")
    assert (home / "skills" / "ops" / "deploy" / "scripts" / "run.sh").read_text() == "echo hi\n"
    assert sidecar(home)["deploy"]["created_by"] == "agent"


def test_put_back_refuses_paths_that_leave_the_skills_folder(home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    for bad in (FileRestore("x", "../outside", "SKILL.md", "x"), FileRestore("x", "x", "../../escape.md", "x")):
        with pytest.raises(SkillError):
            store.put_back([bad])
    assert not (home / "outside").exists() and not (home / "escape.md").exists()


def test_a_torn_last_line_of_the_ledger_is_skipped(home: Path, clock: Clock) -> None:
    store = make_store(home, clock)
    store.create("deploy", skill_md("deploy"))
    ledger = home / "acp-hermes" / "history.jsonl"
    with ledger.open("a") as handle:
        handle.write('{"skill": "deploy", "dir": "dep')
    assert store.history is not None
    assert [e.action for e in store.history.entries("deploy")] == ["create"]
