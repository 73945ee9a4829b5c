"""`acp-hermes checkpoints list|show|prune` and doctor's Checkpoints section, as real subprocesses.

The stores are made with the real store API and real git, the way sessions make them: a checkpoint
``refs/checkpoints/<session>/<NNNN>`` before a turn's first change, ``<NNNN>-end`` when it ended.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from acp_hermes.config import Paths
from acp_hermes_tools.checkpoints import ABSENT, CheckpointStore
from acp_hermes_tools.checkpoints.journal import JOURNAL_NAME, write_journal
from tests.integration.test_cli import SCRIPT, cli_env, run_cli
from tests.integration.test_cli_doctor import doctor
from tests.support.acp_harness import write_config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: checkpoints are off")


def take(home: Path, workspace: Path, session: str, prompts: list[str], *, ended: bool = True) -> CheckpointStore:
    """A checkpoint per prompt in ``workspace``'s store, each turn writing a file (and ended, if asked)."""
    store = CheckpointStore.for_workspace(Paths(home).checkpoints, workspace, max_file_bytes=1 << 20,
                                          max_files=1000)
    first = len([s for s in store.snapshots(f"refs/checkpoints/{session}/") if not s.ref.endswith("-end")])
    for number, prompt in enumerate(prompts, first + 1):
        ref = f"refs/checkpoints/{session}/{number:04d}"
        store.snapshot(ref, {"kind": "restore" if prompt.startswith("/rollback") else "turn", "number": number,
                             "prompt": prompt, "prompt_row": 10 * number})
        (workspace / f"turn-{session}-{number}.txt").write_text(prompt, encoding="utf-8")
        if ended:
            store.snapshot(f"{ref}-end", {"kind": "end"})
    return store


def make_workspace(tmp_path: Path, name: str) -> Path:
    workspace = tmp_path / name
    workspace.mkdir()
    (workspace / "README.md").write_text(f"# {name}\n", encoding="utf-8")
    return workspace


def test_list_show_and_prune(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    app, lib = make_workspace(tmp_path, "app"), make_workspace(tmp_path, "lib")
    take(home, app, "sess-one", ["fix the lexer bug in the tokenizer module", "add the tests", "/rollback 1"])
    take(home, app, "sess-two", ["rename the config loader"], ended=False)
    take(home, lib, "sess-three", ["bump the version"])

    listed = run_cli("checkpoints", "list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert f"{app}\n  4 checkpoints in 2 sessions, newest " in listed.stdout
    assert f"{lib}\n  1 checkpoint in 1 session, newest " in listed.stdout
    assert "\n2 stores, " in listed.stdout and str(Paths(home).checkpoints) in listed.stdout
    as_json = {entry["workspace"]: entry for entry in json.loads(run_cli("checkpoints", "list", "--json",
                                                                          home=home).stdout)}
    assert set(as_json) == {str(app), str(lib)}
    entry = as_json[str(app)]
    assert set(entry) == {"workspace", "store", "checkpoints", "sessions", "newest", "size_bytes", "problem",
                          "interrupted_restore"}
    assert (entry["checkpoints"], entry["sessions"], entry["problem"]) == (4, 2, None)
    assert entry["size_bytes"] > 0 and Path(entry["store"]).is_dir() and entry["newest"][:2] == "20"

    shown = run_cli("checkpoints", "show", str(app), home=home)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"{app}: 4 checkpoints, ")
    one = lines.index("session sess-one")
    assert lines[one + 1].startswith("     1  turn     20")
    assert lines[one + 1].endswith("  fix the lexer bug in the tokenizer module")
    assert lines[one + 2].endswith("add the tests") and "restore  " in lines[one + 3]
    assert "session sess-two" in lines and "-end" not in shown.stdout
    assert "`/rollback <n>`" in shown.stdout

    detail = json.loads(run_cli("checkpoints", "show", str(app), "--json", home=home).stdout)
    assert set(detail) == {"workspace", "store", "size_bytes", "sessions"}
    sessions = {group["session"]: group["checkpoints"] for group in detail["sessions"]}
    assert [c["number"] for c in sessions["sess-one"]] == [1, 2, 3]
    assert [c["kind"] for c in sessions["sess-one"]] == ["turn", "turn", "restore"]
    assert [c["prompt_row"] for c in sessions["sess-one"]] == [10, 20, 30]
    assert [c["ended"] for c in sessions["sess-one"] + sessions["sess-two"]] == [True, True, True, False]
    assert set(sessions["sess-two"][0]) == {"number", "kind", "created_at", "prompt", "prompt_row", "ended", "ref",
                                            "commit"}
    assert sessions["sess-two"][0]["ref"] == "refs/checkpoints/sess-two/0001"

    (tmp_path / "link").symlink_to(app)  # any spelling of the path finds the store
    via_link = run_cli("checkpoints", "show", str(tmp_path / "link"), home=home)
    assert via_link.returncode == 0 and via_link.stdout == shown.stdout

    unknown = run_cli("checkpoints", "show", str(tmp_path / "nowhere"), home=home)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == (f"acp-hermes: no checkpoints for {str(tmp_path / 'nowhere')!r} "
                              "(see `acp-hermes checkpoints list`)\n")

    write_config(home, "checkpoints: {keep: 2}\n")
    pruned = run_cli("checkpoints", "prune", "--json", home=home)
    assert pruned.returncode == 0, pruned.stderr
    report = json.loads(pruned.stdout)
    assert (report["keep"], report["max_age_days"]) == (2, 30)
    by_workspace = {entry["workspace"]: entry for entry in report["stores"]}
    assert by_workspace[str(lib)]["dropped"] == 0 and by_workspace[str(lib)]["left"] == 1
    left = by_workspace[str(app)]["left"]  # the newest two refs: checkpoints and the turns' -end refs
    assert 1 <= left <= 2 and by_workspace[str(app)]["dropped"] == 4 - left
    assert by_workspace[str(app)]["error"] is None
    again = run_cli("checkpoints", "prune", home=home)
    assert again.returncode == 0, again.stderr
    assert f"{app}: dropped 0, {left} checkpoint{'s' if left > 1 else ''} left, " in again.stdout
    assert "Kept the newest 2 per workspace" in again.stdout


def test_no_stores_yet(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    listed = run_cli("checkpoints", "list", home=home)
    assert listed.returncode == 0 and listed.stdout.startswith("No checkpoints yet")
    assert json.loads(run_cli("checkpoints", "list", "--json", home=home).stdout) == []
    assert json.loads(run_cli("checkpoints", "prune", "--json", home=home).stdout)["stores"] == []
    assert run_cli("checkpoints", "show", str(tmp_path), home=home).returncode == 1


def test_doctor_shows_the_stores_and_flags_a_broken_one(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    good = take(home, make_workspace(tmp_path, "good"), "s1", ["one", "two"])
    broken = take(home, make_workspace(tmp_path, "broken"), "s1", ["one"])

    healthy = doctor(home, user_home).stdout
    section = healthy.split("\nCheckpoints\n")[1].split("\n\n")[0]
    assert section.startswith("  enabled\n  git ") and f": {shutil.which('git')}\n" in section
    assert "  2 stores, " in section and str(Paths(home).checkpoints) in section
    assert "BROKEN" not in section and "checkpoint store" not in healthy

    objects = broken.directory / "git" / "objects"
    packs = sorted(p for p in objects.glob("pack/*") if p.is_file())
    assert packs, "the snapshot wrote a pack"
    for path in packs:
        path.chmod(0o600)
        path.unlink()
    checked = doctor(home, user_home)
    section = checked.stdout.split("\nCheckpoints\n")[1].split("\n\n")[0]
    assert f"  BROKEN: {broken.workspace}: " in section and str(good.workspace) not in section
    problems = checked.stdout.split("\nProblems\n")[1]
    assert f"the checkpoint store of {broken.workspace} ({broken.directory}) is broken: " in problems
    assert checked.returncode == 1
    listed = json.loads(run_cli("checkpoints", "list", "--json", home=home).stdout)
    assert [entry["problem"] is not None for entry in listed if entry["workspace"] == str(broken.workspace)] == [True]


def doctor_without_git(home: Path, user_home: Path) -> str:
    """doctor with a PATH that holds no git (the console script runs from its own path)."""
    empty = home.parent / "no-git-bin"
    empty.mkdir(exist_ok=True)
    env = {key: value for key, value in cli_env(home).items() if key != "XDG_CONFIG_HOME"}
    env.update(HOME=str(user_home), PATH=str(empty))
    result = subprocess.run([SCRIPT, "doctor"], capture_output=True, text=True, env=env, cwd=str(home.parent),
                            stdin=subprocess.DEVNULL, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def test_doctor_says_when_git_is_missing(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    report = doctor_without_git(home, user_home)
    section = report.split("\nCheckpoints\n")[1].split("\n\n")[0]
    assert "  git: not found: checkpoints are off" in section
    assert "git is not on PATH" in report.split("\nProblems\n")[1]

    write_config(home, "checkpoints: {enabled: false}\n")
    report = doctor_without_git(home, user_home)
    section = report.split("\nCheckpoints\n")[1].split("\n\n")[0]
    assert "turned off in the configuration" in section and "git: not found: checkpoints are off" in section
    assert "git is not on PATH" not in report  # no checkpoints wanted: a missing git is no problem


def test_a_restore_a_killed_process_left_is_noted(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    workspace = make_workspace(tmp_path, "app")
    store = take(home, workspace, "s1", ["one"])
    write_journal(store.directory / JOURNAL_NAME, {"README.md": ABSENT})  # as a restore killed mid-way leaves it

    report = doctor(home, user_home).stdout
    section = report.split("\nCheckpoints\n")[1].split("\n\n")[0]
    note = f"  note: a restore in {workspace} was interrupted; acp-hermes finishes it when its next session starts"
    assert note in section
    assert "BROKEN" not in section and "checkpoint store" not in report
    listed = run_cli("checkpoints", "list", home=home).stdout
    assert "1 checkpoint in 1 session" in listed and "a restore was interrupted" in listed
    entry, = json.loads(run_cli("checkpoints", "list", "--json", home=home).stdout)
    assert (entry["interrupted_restore"], entry["problem"]) == (True, None)


def test_sessions_delete_removes_the_sessions_checkpoints_or_says_why_not(tmp_path: Path) -> None:
    from acp_hermes_memory.session_db import SessionDB

    home = tmp_path / "hermes-home"
    app = make_workspace(tmp_path, "app")
    with SessionDB(Paths(home).state_db) as db:
        for session in ("sess-one", "sess-two"):
            db.create_session(session, cwd=str(app), model=None, mode=None, model_config={}, system_prompt=None)
    take(home, app, "sess-one", ["fix the lexer", "add the tests"])
    store = take(home, app, "sess-two", ["rename the loader"])

    deleted = run_cli("sessions", "delete", "sess-one", "--yes", home=home)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == "Deleted sess-one, with its 2 checkpoints.\n"
    assert {snapshot.ref.split("/")[2] for snapshot in store.snapshots()} == {"sess-two"}
    listed = json.loads(run_cli("checkpoints", "list", "--json", home=home).stdout)
    assert [(entry["checkpoints"], entry["sessions"]) for entry in listed] == [(1, 1)]

    no_git = tmp_path / "bin"  # a PATH without git: the session goes, and the line says its checkpoints stay
    no_git.mkdir()
    result = subprocess.run([SCRIPT, "sessions", "delete", "sess-two", "--yes"], capture_output=True, text=True,
                            env={**cli_env(home), "PATH": str(no_git)}, stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 1 and result.stdout == "Deleted sess-two.\n", result
    assert result.stderr == (f"acp-hermes: the session is deleted, but its checkpoints of {app} (in {store.directory}) "
                             "could not be removed: git is not installed (not found on PATH): checkpoints need it\n")
    assert {snapshot.ref.split("/")[2] for snapshot in store.snapshots()} == {"sess-two"}
    assert json.loads(run_cli("sessions", "list", "--json", home=home).stdout) == []
