"""The checkpoint store on real workspaces with the real git: snapshots, restores, recovery, pruning."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from acp_hermes_memory.fs import exclusive_lock
from acp_hermes_tools.checkpoints import (
    ABSENT,
    CheckpointStore,
    CheckpointsUnavailable,
    FileState,
    WorkspaceTooLarge,
    recover_all,
    stores,
)
from acp_hermes_tools.checkpoints.journal import JOURNAL_NAME
from acp_hermes_tools.checkpoints.workspace import TEMP_PREFIX

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    # A pipe to git left open is a ResourceWarning when it is collected, reported as "unraisable".
    pytest.mark.filterwarnings("error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning"),
]
REF = "refs/checkpoints/session"


def store_for(tmp_path: Path, *, max_file_bytes: int = 1 << 20, max_files: int = 10_000,
              git: str | None = None) -> CheckpointStore:
    return CheckpointStore.for_workspace(tmp_path / "home", tmp_path / "ws", max_file_bytes=max_file_bytes,
                                         max_files=max_files, git=git)


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    put(root / "README.md", "hello\n")
    put(root / "src" / "app.py", "print('app')\n")
    put(root / "src" / "util.py", "def util(): ...\n")
    return root


def undo(store: CheckpointStore, old: str, new: str) -> dict[str, FileState]:
    """What /rollback restores: each changed path as the older snapshot had it."""
    return {path: before for path, (before, _) in store.changes(old, new).items()}


def test_snapshots_record_the_workspace_and_changes_compare_two(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    first = store.snapshot(f"{REF}/0001", {"kind": "turn", "prompt": "fix it"})
    put(workspace / "src" / "app.py", "print('changed')\n")
    (workspace / "src" / "util.py").unlink()
    put(workspace / "docs" / "new.md", "new\n")
    (workspace / "README.md").chmod(0o755)
    (workspace / "link").symlink_to("README.md")
    second = store.snapshot(f"{REF}/0001-end", {"kind": "turn"})

    assert first.meta == {"kind": "turn", "prompt": "fix it"} and first.ref == f"{REF}/0001"
    assert abs(first.created_at - time.time()) < 5
    changed = store.changes(first.commit, second.commit)
    assert set(changed) == {"src/app.py", "src/util.py", "docs/new.md", "README.md", "link"}
    assert changed["src/util.py"][1] == ABSENT and changed["docs/new.md"][0] == ABSENT
    assert changed["README.md"][0].mode == "100644" and changed["README.md"][1].mode == "100755"
    assert changed["link"][1].mode == "120000" and store.read(changed["link"][1].blob or "") == b"README.md"
    assert store.read(changed["src/app.py"][0].blob or "") == b"print('app')\n"
    assert store.changes(second.commit, second.commit) == {}

    states = store.states(second.commit, ["src/app.py", "src/util.py", "src", "nowhere"])
    assert store.read(states["src/app.py"].blob or "") == b"print('changed')\n"
    assert states["src/util.py"] == states["src"] == states["nowhere"] == ABSENT
    assert [s.ref for s in store.snapshots()] == [f"{REF}/0001", f"{REF}/0001-end"]
    assert store.snapshots(f"{REF}/")[0] == first


def test_states_now_are_what_a_snapshot_would_record_without_taking_one(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    put(workspace / "run.sh", "#!/bin/sh\n").chmod(0o755)
    (workspace / "link").symlink_to("README.md")
    (workspace / "big.bin").write_bytes(b"x" * 100)
    snapshot = store.snapshot(f"{REF}/1", {})
    paths = ["README.md", "run.sh", "link", "src", "missing.txt"]
    assert store.states_now(paths) == store.states(snapshot.commit, paths)
    assert store.states_now(["src", "missing.txt"]) == {"src": ABSENT, "missing.txt": ABSENT}
    (workspace / "README.md").write_text("changed\n")
    assert store.states_now(["README.md"]) != store.states(snapshot.commit, ["README.md"])
    small = store_for(tmp_path, max_file_bytes=10)  # too big to keep: no snapshot would hold it either
    assert small.states_now(["big.bin"]) == {"big.bin": ABSENT}
    assert store.snapshots() == [snapshot]  # nothing was written


def test_a_snapshot_with_nothing_changed_has_the_same_tree(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    first = store.snapshot(f"{REF}/0001", {})
    second = store.snapshot(f"{REF}/0002", {})
    assert store.changes(first.commit, second.commit) == {} and len(store.snapshots()) == 2


def test_gitignore_files_are_honoured(workspace: Path, tmp_path: Path) -> None:
    put(workspace / ".gitignore", "*.log\nbuild/\n")
    put(workspace / "src" / ".gitignore", "generated.py\n")
    for name in ("debug.log", "build/out.o", "src/generated.py"):
        put(workspace / name, "ignored\n")
    store = store_for(tmp_path)
    snapshot = store.snapshot(f"{REF}/0001", {})
    states = store.states(snapshot.commit, ["debug.log", "build/out.o", "src/generated.py", ".gitignore"])
    assert states["debug.log"] == states["build/out.o"] == states["src/generated.py"] == ABSENT
    assert states[".gitignore"] != ABSENT


def test_pythons_bytecode_caches_are_left_out_without_a_gitignore(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    first = store.snapshot(f"{REF}/0001", {})
    put(workspace / "__pycache__" / "calc.cpython-311.pyc", "bytecode\n")
    put(workspace / "pkg" / "__pycache__" / "mod.cpython-311.pyc", "bytecode\n")
    put(workspace / "calc.py", "changed\n")
    second = store.snapshot(f"{REF}/0002", {})
    assert list(store.changes(first.commit, second.commit)) == ["calc.py"]


def test_big_files_are_left_out_and_reported(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path, max_file_bytes=100)
    put(workspace / "data.bin", "x" * 101)
    put(workspace / "grows.txt", "small\n")
    first = store.snapshot(f"{REF}/0001", {"kind": "turn"})
    assert first.meta == {"kind": "turn", "skipped_large": ["data.bin"]}
    assert store.states(first.commit, ["data.bin"])["data.bin"] == ABSENT

    put(workspace / "grows.txt", "y" * 500)  # a file the store has, grown over the limit: dropped and reported
    second = store.snapshot(f"{REF}/0002", {})
    assert sorted(second.meta["skipped_large"]) == ["data.bin", "grows.txt"]
    assert store.states(second.commit, ["grows.txt"])["grows.txt"] == ABSENT
    assert store.snapshots()[-1].meta == second.meta


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_files_are_left_out_and_reported(workspace: Path, tmp_path: Path) -> None:
    secret = put(workspace / "secret.txt", "no\n")
    secret.chmod(0)
    snapshot = store_for(tmp_path).snapshot(f"{REF}/0001", {})
    assert snapshot.meta["skipped_unreadable"] == ["secret.txt"]


def test_a_workspace_with_too_many_files_is_refused_before_anything_is_stored(workspace: Path,
                                                                             tmp_path: Path) -> None:
    for n in range(4):
        put(workspace / f"extra{n}.txt", "x\n")
    store = store_for(tmp_path, max_files=5)
    with pytest.raises(WorkspaceTooLarge, match=r"7 files, more than the 5"):
        store.snapshot(f"{REF}/0001", {})
    with pytest.raises(WorkspaceTooLarge):  # the verdict is kept: no second walk
        store.snapshot(f"{REF}/0001", {})
    assert store.snapshots() == []


def _git(*args: str, cwd: Path) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    result = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, env=env,
                            check=True, capture_output=True, text=True)
    return result.stdout


def _tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` by content (and every symlink by target): what changed in it shows."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            found[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return found


def test_a_workspace_that_is_a_git_repository_is_left_exactly_as_it_was(workspace: Path, tmp_path: Path) -> None:
    _git("init", "-q", ".", cwd=workspace)
    _git("add", "-A", cwd=workspace)
    _git("commit", "-q", "-m", "start", cwd=workspace)
    put(workspace / "src" / "app.py", "print('uncommitted')\n")  # the user's own work in progress
    put(workspace / "untracked.txt", "mine\n")
    status = _git("status", "--porcelain", cwd=workspace)
    index = (workspace / ".git" / "index").read_bytes()
    refs = _git("for-each-ref", cwd=workspace)
    dot_git = _tree_digest(workspace / ".git")

    store = store_for(tmp_path)
    before = store.snapshot(f"{REF}/0001", {})
    put(workspace / "src" / "app.py", "print('the agent')\n")
    (workspace / "untracked.txt").unlink()
    after = store.snapshot(f"{REF}/0001-end", {})
    report = store.restore(undo(store, before.commit, after.commit))

    assert report.failed == () and sorted(report.written) == ["src/app.py", "untracked.txt"]
    assert _git("status", "--porcelain", cwd=workspace) == status
    assert (workspace / ".git" / "index").read_bytes() == index
    assert _git("for-each-ref", cwd=workspace) == refs
    assert _tree_digest(workspace / ".git") == dot_git  # config, HEAD, objects, hooks: not a byte changed
    assert not any(path.startswith(".git/") for path in store.changes(before.commit, after.commit))
    assert store.states(before.commit, [".git/config", ".git/HEAD"]) == {".git/config": ABSENT, ".git/HEAD": ABSENT}


def test_nested_repositories_are_left_out(workspace: Path, tmp_path: Path) -> None:
    nested = put(workspace / "vendor" / "lib" / "lib.py", "x = 1\n").parent
    _git("init", "-q", ".", cwd=nested)
    snapshot = store_for(tmp_path).snapshot(f"{REF}/0001", {})
    assert store_for(tmp_path).states(snapshot.commit, ["vendor/lib", "vendor/lib/lib.py"]) == {
        "vendor/lib": ABSENT, "vendor/lib/lib.py": ABSENT}


def test_line_endings_and_attributes_never_change_the_bytes(workspace: Path, tmp_path: Path) -> None:
    put(workspace / ".gitattributes", "* text eol=crlf\n*.txt ident filter=lfs\n")
    crlf = workspace / "crlf.md"
    crlf.write_bytes(b"one\r\ntwo\r\n")
    ident = workspace / "id.txt"
    ident.write_bytes(b"$Id$\nlf only\n")
    store = store_for(tmp_path)
    first = store.snapshot(f"{REF}/0001", {})
    crlf.write_bytes(b"changed\n")
    ident.write_bytes(b"changed\n")
    second = store.snapshot(f"{REF}/0002", {})
    store.restore(undo(store, first.commit, second.commit))
    assert crlf.read_bytes() == b"one\r\ntwo\r\n" and ident.read_bytes() == b"$Id$\nlf only\n"


def test_restore_writes_deletes_and_recreates_files_symlinks_and_modes(workspace: Path, tmp_path: Path) -> None:
    script = put(workspace / "bin" / "run.sh", "#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (workspace / "link").symlink_to("src/app.py")
    put(workspace / "deep" / "er" / "file.txt", "deep\n")
    store = store_for(tmp_path)
    before = store.snapshot(f"{REF}/0001", {})

    put(workspace / "src" / "app.py", "broken\n")
    script.unlink()
    (workspace / "link").unlink()
    put(workspace / "link", "now a file\n")
    shutil.rmtree(workspace / "deep")
    put(workspace / "new.txt", "new\n")
    put(workspace / "newdir" / "inner" / "x.txt", "x\n")
    (workspace / "README.md").chmod(0o700)
    after = store.snapshot(f"{REF}/0001-end", {})

    report = store.restore(undo(store, before.commit, after.commit))
    assert report.failed == ()
    assert sorted(report.written) == ["README.md", "bin/run.sh", "deep/er/file.txt", "link", "src/app.py"]
    assert sorted(report.deleted) == ["new.txt", "newdir/inner/x.txt"]
    assert (workspace / "src" / "app.py").read_text() == "print('app')\n"
    assert script.read_text() == "#!/bin/sh\necho hi\n" and os.access(script, os.X_OK)
    assert (workspace / "link").is_symlink() and os.readlink(workspace / "link") == "src/app.py"
    assert (workspace / "deep" / "er" / "file.txt").read_text() == "deep\n"
    assert not (workspace / "new.txt").exists() and not (workspace / "newdir").exists()
    assert stat.S_IMODE((workspace / "README.md").stat().st_mode) == 0o600  # its permissions kept, x cleared
    assert not list(workspace.rglob(f"{TEMP_PREFIX}*")) and not (store.directory / JOURNAL_NAME).exists()
    assert store.changes(before.commit, store.snapshot(f"{REF}/0002", {}).commit) == {}


def test_a_file_and_a_directory_can_take_each_other_s_place(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    put(workspace / "thing", "a file\n")
    before = store.snapshot(f"{REF}/0001", {})
    (workspace / "thing").unlink()
    put(workspace / "thing" / "inside.txt", "a directory now\n")
    after = store.snapshot(f"{REF}/0002", {})
    assert store.states(after.commit, ["thing", "thing/inside.txt"])["thing"] == ABSENT

    report = store.restore(undo(store, before.commit, after.commit))
    assert report.failed == () and (workspace / "thing").read_text() == "a file\n"
    report = store.restore(undo(store, after.commit, before.commit))
    assert report.failed == () and (workspace / "thing" / "inside.txt").read_text() == "a directory now\n"


def test_a_directory_replaced_by_a_symlink_is_stored_as_the_symlink(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    before = store.snapshot(f"{REF}/0001", {})
    put(tmp_path / "outside" / "app.py", "not the workspace's\n")
    shutil.rmtree(workspace / "src")
    (workspace / "src").symlink_to(tmp_path / "outside")
    after = store.snapshot(f"{REF}/0002", {})
    changed = store.changes(before.commit, after.commit)
    assert changed["src"][1].mode == "120000" and changed["src/app.py"][1] == ABSENT
    assert store.restore(undo(store, before.commit, after.commit)).failed == ()
    assert (workspace / "src" / "app.py").read_text() == "print('app')\n" and not (workspace / "src").is_symlink()
    assert (tmp_path / "outside" / "app.py").read_text() == "not the workspace's\n"


def test_restore_refuses_paths_that_leave_the_workspace(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    snapshot = store.snapshot(f"{REF}/0001", {})
    blob = store.states(snapshot.commit, ["README.md"])["README.md"]
    bad = ["../escaped.txt", "/tmp/absolute.txt", "src/../../escaped.txt", "", "src//x", ".git/config",
           "sub/.GIT/hooks/pre-commit"]
    report = store.restore({**dict.fromkeys(bad, blob), "ok.txt": blob, "bad-mode": FileState(blob.blob, "160000")})
    assert {path for path, _ in report.failed} == {*bad, "bad-mode"} and report.written == ("ok.txt",)
    assert not (tmp_path / "escaped.txt").exists() and not (workspace / ".git").exists()
    assert (workspace / "ok.txt").read_text() == "hello\n"


def test_restore_never_follows_a_symlinked_directory_out_of_the_workspace(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    snapshot = store.snapshot(f"{REF}/0001", {})
    blob = store.states(snapshot.commit, ["README.md"])["README.md"]
    outside = tmp_path / "outside"
    put(outside / "victim.txt", "keep me\n")
    (workspace / "escape").symlink_to(outside)

    report = store.restore({"escape/planted.txt": blob, "escape/victim.txt": ABSENT})
    assert dict(report.failed).keys() == {"escape/planted.txt", "escape/victim.txt"}
    assert all("symlink" in why for _, why in report.failed)
    assert not (outside / "planted.txt").exists() and (outside / "victim.txt").read_text() == "keep me\n"


_KILLED_RESTORE = """
import sys
from pathlib import Path
from acp_hermes_tools.checkpoints import CheckpointStore, FileState
from acp_hermes_tools.checkpoints import workspace

real_write_file = workspace._write_file
written = []

def write_file(*args, **kwargs):
    real_write_file(*args, **kwargs)  # the temp file is there, not yet renamed into place
    written.append(args)
    if len(written) == 3:
        print("half", flush=True)
        sys.stdin.read()  # blocks until the test kills this process

workspace._write_file = write_file
store = CheckpointStore.for_workspace(Path(sys.argv[1]), Path(sys.argv[2]), max_file_bytes=1 << 20, max_files=1000)
files = {path: FileState(blob, "100644") for path, blob in zip(sys.argv[3::2], sys.argv[4::2])}
store.restore(files)
"""


def test_recover_finishes_a_restore_that_was_killed_half_way(workspace: Path, tmp_path: Path) -> None:
    names = [f"src/file{n}.txt" for n in range(6)]
    for n, name in enumerate(names):
        put(workspace / name, f"original {n}\n")
    store = store_for(tmp_path)
    before = store.snapshot(f"{REF}/0001", {})
    for name in names:
        put(workspace / name, "overwritten\n")
    after = store.snapshot(f"{REF}/0002", {})
    plan = undo(store, before.commit, after.commit)
    arguments = [word for path, state in sorted(plan.items()) for word in (path, state.blob or "")]

    with subprocess.Popen([sys.executable, "-c", _KILLED_RESTORE, str(tmp_path / "home"), str(workspace),
                           *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stdout.readline() == b"half\n"
        os.kill(child.pid, signal.SIGKILL)

    assert (store.directory / JOURNAL_NAME).exists()
    contents = [(workspace / name).read_text() for name in names]
    assert contents.count("overwritten\n") == 4  # two renamed into place, the third left as a temp file
    assert len(list((workspace / "src").glob(f"{TEMP_PREFIX}*"))) == 1
    assert store.problem() == "a restore was interrupted; recovering finishes it"

    [(where, report)] = recover_all(tmp_path / "home")
    assert where == workspace and sorted(report.written) == names and report.failed == ()
    assert [(workspace / name).read_text() for name in names] == [f"original {n}\n" for n in range(6)]
    assert not list((workspace / "src").glob(f"{TEMP_PREFIX}*"))
    assert not (store.directory / JOURNAL_NAME).exists() and store.recover() is None and store.problem() is None


def test_prune_drops_snapshots_by_count_and_age_and_collects_their_objects(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    blobs = []
    for n in range(1, 6):
        put(workspace / "src" / "app.py", f"version {n}\n")
        snapshot = store.snapshot(f"{REF}/{n:04d}", {"n": n})
        blobs.append(store.states(snapshot.commit, ["src/app.py"])["src/app.py"].blob or "")

    assert store.prune(keep=2, max_age_seconds=3600) == 3
    assert [s.meta["n"] for s in store.snapshots()] == [4, 5]
    with pytest.raises(CheckpointsUnavailable):
        store.read(blobs[0])  # nothing holds it any more: collected
    assert store.read(blobs[4]) == b"version 5\n"
    assert store.prune(keep=10, max_age_seconds=3600) == 0

    assert store.prune(keep=10, max_age_seconds=60, now=time.time() + 120) == 2
    assert store.snapshots() == [] and store.problem() is None
    put(workspace / "src" / "util.py", "after the prune\n")  # the next snapshot still builds on the last tree
    snapshot = store.snapshot(f"{REF}/0006", {})
    states = store.states(snapshot.commit, ["src/app.py", "src/util.py", "README.md"])
    assert store.read(states["src/app.py"].blob or "") == b"version 5\n"
    assert store.read(states["src/util.py"].blob or "") == b"after the prune\n" and states["README.md"] != ABSENT


def read_app(store: CheckpointStore, commit: str) -> bytes:
    return store.read(store.states(commit, ["src/app.py"])["src/app.py"].blob or "")


def test_forget_drops_one_sessions_checkpoints_and_their_copies_of_the_files(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    put(workspace / "src" / "app.py", "the deleted session's secret\n")
    doomed = store.snapshot("refs/checkpoints/doomed/0001", {})
    store.snapshot("refs/checkpoints/doomed/0001-end", {})
    secret = store.states(doomed.commit, ["src/app.py"])["src/app.py"].blob or ""
    put(workspace / "src" / "app.py", "the kept session's version\n")
    kept = store.snapshot("refs/checkpoints/doomed-not/0001", {})  # a prefix of its name: not the same session
    store.snapshot("refs/checkpoints/doomed/0002", {})

    assert store.forget(["refs/checkpoints/doomed/"]) == 2
    assert [s.ref for s in store.snapshots()] == ["refs/checkpoints/doomed-not/0001"]
    with pytest.raises(CheckpointsUnavailable):
        store.read(secret)  # collected: the copy left the disk with the ref
    assert read_app(store, kept.commit) == b"the kept session's version\n"
    assert store.forget(["refs/checkpoints/doomed/"]) == 0

    assert store.forget(["refs/checkpoints/doomed-not/"]) == 1
    assert store.snapshots() == [] and store.problem() is None
    assert not (store.directory / "index").exists() and not (store.directory / "base").exists()
    objects = subprocess.run(["git", "--git-dir", str(store.directory / "git"), "count-objects", "-v"],
                             capture_output=True, text=True, check=True).stdout
    assert "count: 0" in objects and "in-pack: 0" in objects, objects  # no file of the workspace is left
    after = store.snapshot(f"{REF}/0001", {})  # and the next snapshot starts afresh
    assert read_app(store, after.commit) == b"the kept session's version\n"


def test_everything_in_a_store_is_the_users_alone_whatever_the_umask(workspace: Path, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = store_for(tmp_path)
        store.snapshot(f"{REF}/0001", {"prompt": "a"})
        put(workspace / "src" / "app.py", "changed\n")
        store.snapshot(f"{REF}/0001-end", {})
    finally:
        os.umask(old)
    found = [store.directory, *store.directory.rglob("*")]
    assert len(found) > 10 and all(stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 for path in found)
    assert {stat.S_IMODE(path.stat().st_mode) for path in found if path.is_dir()} == {0o700}
    assert {stat.S_IMODE(path.stat().st_mode) for path in found if path.is_file()} <= {0o600, 0o400}


def test_size_bytes_counts_what_the_store_takes_on_disk(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    assert store.size_bytes() == 0
    store.snapshot(f"{REF}/0001", {})
    empty_ish = store.size_bytes()
    (workspace / "noise.bin").write_bytes(os.urandom(300_000))
    store.snapshot(f"{REF}/0002", {})
    assert empty_ish > 0 and store.size_bytes() - empty_ish >= 300_000


def test_problem_names_a_store_with_missing_objects(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    store.snapshot(f"{REF}/0001", {})
    put(workspace / "src" / "app.py", "second\n")
    store.snapshot(f"{REF}/0002", {})
    assert store.problem() is None
    packs = sorted((store.directory / "git" / "objects" / "pack").glob("*.pack"), key=lambda p: p.stat().st_mtime)
    for part in (packs[-1], packs[-1].with_suffix(".idx")):
        part.unlink()
    assert "fsck" in (store.problem() or "")
    shutil.rmtree(store.directory / "git")
    assert "no git repository" in (store.problem() or "")


def test_a_lost_base_makes_the_next_snapshot_a_full_one(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    store.snapshot(f"{REF}/0001", {})
    (workspace / "src" / "util.py").unlink()
    (store.directory / "base").unlink()  # as if the process died between the index and its record
    snapshot = store.snapshot(f"{REF}/0002", {})
    assert store.states(snapshot.commit, ["src/util.py"])["src/util.py"] == ABSENT
    assert store.states(snapshot.commit, ["src/app.py"])["src/app.py"] != ABSENT


def test_a_base_tree_the_store_lacks_makes_the_next_snapshot_a_full_one(workspace: Path, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    store = store_for(tmp_path)
    store.snapshot(f"{REF}/0001", {})
    base = store.directory / "base"
    base.write_text(f"{'1' * 40} {base.read_text().split()[1]}\n")  # recorded with this index, but no such tree
    put(workspace / "src" / "app.py", "changed\n")
    snapshot = store.snapshot(f"{REF}/0002", {})
    states = store.states(snapshot.commit, ["src/app.py", "README.md"])
    assert store.read(states["src/app.py"].blob or "") == b"changed\n" and states["README.md"] != ABSENT
    assert "taking a full one" in caplog.text


def test_a_workspace_that_is_gone_is_named(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    store.snapshot(f"{REF}/0001", {})
    shutil.rmtree(workspace)
    with pytest.raises(CheckpointsUnavailable, match="is not a directory"):
        store.snapshot(f"{REF}/0002", {})


def test_a_store_inside_the_workspace_leaves_itself_out(workspace: Path) -> None:
    store = CheckpointStore.for_workspace(workspace / ".hermes" / "checkpoints", workspace, max_file_bytes=1 << 20,
                                          max_files=1000)
    store.snapshot(f"{REF}/0001", {})
    put(workspace / "src" / "app.py", "again\n")
    snapshot = store.snapshot(f"{REF}/0002", {})
    assert set(store.changes(store.snapshots()[0].commit, snapshot.commit)) == {"src/app.py"}


def test_concurrent_snapshots_are_serialised_by_the_lock(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    other = store_for(tmp_path)  # another instance, as another session (or process) would have
    failures: list[BaseException] = []

    def take(which: CheckpointStore, name: str) -> None:
        try:
            for n in range(8):
                put(workspace / f"{name}.txt", f"{name} {n}\n")
                which.snapshot(f"refs/checkpoints/{name}/{n:04d}", {"n": n})
        except BaseException as exc:
            failures.append(exc)

    with exclusive_lock(store.directory / "lock"):  # both threads wait for it, then take turns
        threads = [threading.Thread(target=take, args=(s, name)) for s, name in ((store, "one"), (other, "two"))]
        for thread in threads:
            thread.start()
        assert all(thread.is_alive() for thread in threads)  # neither can finish while the lock is held
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(store.snapshots()) == 16 and store.problem() is None
    last = store.snapshot(f"{REF}/last", {})
    states = store.states(last.commit, ["one.txt", "two.txt"])
    assert [store.read(states[name].blob or "") for name in ("one.txt", "two.txt")] == [b"one 7\n", b"two 7\n"]


def test_without_git_the_store_says_why(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_for(tmp_path, git="/nonexistent")
    with pytest.raises(CheckpointsUnavailable, match="/nonexistent"):
        store.snapshot(f"{REF}/0001", {})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(CheckpointsUnavailable, match="git is not installed"):
        store_for(tmp_path).snapshot(f"{REF}/0001", {})
    assert store_for(tmp_path).problem() == "git is not installed (not found on PATH)"


def test_bad_refs_and_revisions_are_the_caller_s_mistake(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    for ref in ("checkpoints/x", "refs/checkpoints/a..b", "refs/checkpoints/x.lock", "refs/with space"):
        with pytest.raises(ValueError):
            store.snapshot(ref, {})
    with pytest.raises(ValueError):
        store.changes("--output=/tmp/x", "HEAD")


def test_stores_lists_every_workspace_store(workspace: Path, tmp_path: Path) -> None:
    put(tmp_path / "other" / "a.txt", "a\n")
    store_for(tmp_path).snapshot(f"{REF}/0001", {})
    CheckpointStore.for_workspace(tmp_path / "home", tmp_path / "other", max_file_bytes=1000,
                                  max_files=10).snapshot(f"{REF}/0001", {})
    assert sorted(str(s.workspace) for s in stores(tmp_path / "home")) == [str(tmp_path / "other"), str(workspace)]
    assert stores(tmp_path / "nowhere") == [] and recover_all(tmp_path / "home") == []
    assert stat.S_IMODE(store_for(tmp_path).directory.stat().st_mode) == 0o700


def test_prune_counts_a_turn_end_snapshot_with_its_checkpoint(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    for n in range(1, 4):
        put(workspace / "src" / "app.py", f"before {n}\n")
        store.snapshot(f"{REF}/{n:04d}", {"n": n})
        put(workspace / "src" / "app.py", f"after {n}\n")
        store.snapshot(f"{REF}/{n:04d}-end", {"n": n})

    assert store.prune(keep=2, max_age_seconds=3600) == 1
    assert [s.ref.rsplit("/", 1)[1] for s in store.snapshots()] == ["0002", "0002-end", "0003", "0003-end"]


def test_a_store_whose_workspace_is_gone_is_still_listed_and_pruned(workspace: Path, tmp_path: Path) -> None:
    store = store_for(tmp_path)
    store.snapshot(f"{REF}/0001", {"n": 1})
    shutil.rmtree(workspace)

    assert [s.meta["n"] for s in store.snapshots()] == [1]
    assert store.problem() is None
    assert store.prune(keep=10, max_age_seconds=60, now=time.time() + 120) == 1
