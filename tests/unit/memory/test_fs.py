"""File primitives on a real disk: atomic replacement, private modes, stale temp files, locks, no-follow writes."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import acp_hermes_memory.fs
from acp_hermes_memory.fs import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    STALE_TEMP_SECONDS,
    PathChanged,
    atomic_write_text,
    check_unchanged,
    delete_exactly,
    exclusive_lock,
    lock_path_for,
    private_directory,
    private_file,
    remove_stale_temp_files,
    write_text_exactly,
)

needs_dir_fd = pytest.mark.skipif(not acp_hermes_memory.fs._DIR_FD, reason="no directory descriptors on this OS")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and flock")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- atomic_write_text ------------------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize(("existing_mode", "mode", "expected"), [
    (None, None, 0o644),  # a new file
    (0o640, None, 0o640),  # an existing file keeps its permissions
    (0o644, 0o600, 0o600),  # an explicit mode wins
    (None, 0o600, 0o600),
])
def test_atomic_write_creates_parents_and_sets_the_mode(root: Path, existing_mode: int | None, mode: int | None,
                                                        expected: int) -> None:
    path = root / "a" / "b" / "file.txt"
    if existing_mode is not None:
        path.parent.mkdir(parents=True)
        path.write_text("old")
        os.chmod(path, existing_mode)
    atomic_write_text(path, "new ünïcode\r\nline", mode=mode)
    assert path.read_bytes() == "new ünïcode\r\nline".encode()  # no newline translation
    assert mode_of(path) == expected
    assert leftovers(path.parent) == []


def test_atomic_write_through_a_symlinked_file_updates_its_target(root: Path) -> None:
    target = root / "real.txt"
    target.write_text("old")
    link = root / "link.txt"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(root: Path, failing: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = root / "data.json"
    path.write_text('{"whole": true}')

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(f"{failing} failed")

    monkeypatch.setattr(acp_hermes_memory.fs.os, failing, fail)
    with pytest.raises(OSError, match=f"{failing} failed"):
        atomic_write_text(path, '{"whole": false, "and": "much longer"}')
    monkeypatch.undo()
    assert path.read_text() == '{"whole": true}'
    assert leftovers(root) == []


# -- private files and directories -----------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("before", [None, 0o755, 0o750, 0o700])
def test_private_directory_is_made_or_tightened_to_owner_only(root: Path, before: int | None) -> None:
    path = root / "private" / "nested"
    if before is not None:
        path.mkdir(parents=True)
        os.chmod(path, before)
    assert private_directory(path) == path
    assert path.is_dir() and mode_of(path) == PRIVATE_DIR_MODE == 0o700


@posix_only
@pytest.mark.parametrize("before", [None, 0o644, 0o666, 0o600])
def test_private_file_is_made_or_tightened_and_keeps_its_content(root: Path, before: int | None) -> None:
    path = root / "secret.db"
    if before is not None:
        path.write_text("content")
        os.chmod(path, before)
    assert private_file(path) == path
    assert mode_of(path) == PRIVATE_FILE_MODE == 0o600
    assert path.read_text() == ("" if before is None else "content")


# -- stale temp files -------------------------------------------------------------------------------


def test_only_old_temp_files_of_our_naming_are_removed(root: Path) -> None:
    old = time.time() - STALE_TEMP_SECONDS - 60
    for name in (".grants.yaml.0a1b2c.tmp", "visible.tmp", ".hidden", "notes.txt"):  # old; only the first goes
        (root / name).write_text("x")
        os.utime(root / name, (old, old))
    (root / ".dir.tmp").mkdir()
    os.utime(root / ".dir.tmp", (old, old))
    (root / ".young.0a1b2c.tmp").write_text("x")  # may be a write under way in another process
    assert remove_stale_temp_files(root) == [root / ".grants.yaml.0a1b2c.tmp"]
    assert sorted(p.name for p in root.iterdir()) == [".dir.tmp", ".hidden", ".young.0a1b2c.tmp", "notes.txt",
                                                      "visible.tmp"]


def test_the_age_limit_is_adjustable_and_a_missing_directory_is_fine(root: Path) -> None:
    (root / ".fresh.abc.tmp").write_text("x")
    assert remove_stale_temp_files(root / "missing") == []
    assert remove_stale_temp_files(root) == []
    assert remove_stale_temp_files(root, older_than=-1.0) == [root / ".fresh.abc.tmp"]


# -- locks ------------------------------------------------------------------------------------------


def test_the_lock_file_is_a_sibling(root: Path) -> None:
    assert lock_path_for(root / "permissions.yaml") == root / "permissions.yaml.lock"


@posix_only
def test_an_exclusive_lock_is_held_for_the_body_only(root: Path) -> None:
    import fcntl

    lock = root / "made" / "store.lock"

    def free() -> bool:
        with open(lock, "a+b") as handle:  # another open file description: conflicts like another process
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return True

    with exclusive_lock(lock):
        assert lock.exists() and not free()
    assert free()
    with pytest.raises(RuntimeError), exclusive_lock(lock):
        raise RuntimeError("the body failed")
    assert free()


# -- no-follow writes and deletes ---------------------------------------------------------------------


@pytest.fixture
def swapped(root: Path) -> tuple[Path, Path]:
    """``work/dir`` was checked as a directory, then replaced by a link to ``outside``."""
    outside = root / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text("precious")
    work = root / "work"
    work.mkdir()
    (work / "dir").symlink_to(outside, target_is_directory=True)
    return work / "dir", outside


@needs_dir_fd
@pytest.mark.parametrize("relative", ["file.txt", "new.txt", "sub/new.txt"])
def test_writing_under_a_directory_swapped_for_a_symlink_raises_and_touches_nothing(
        swapped: tuple[Path, Path], relative: str) -> None:
    directory, outside = swapped
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    with pytest.raises(PathChanged, match="is a symlink now"):
        write_text_exactly(directory / relative, "planted")
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before
    assert (outside / "file.txt").read_text() == "precious"


@needs_dir_fd
@pytest.mark.parametrize("action", [delete_exactly, check_unchanged])
def test_deleting_or_checking_under_a_swapped_directory_raises(swapped: tuple[Path, Path],
                                                               action: Callable[[Path], None]) -> None:
    directory, outside = swapped
    with pytest.raises(PathChanged):
        action(directory / "file.txt")
    assert (outside / "file.txt").read_text() == "precious"


@needs_dir_fd
def test_check_unchanged_looks_at_the_nearest_existing_ancestor(swapped: tuple[Path, Path], root: Path) -> None:
    directory, _ = swapped
    check_unchanged(root / "work" / "not" / "yet" / "made.txt")  # real directories all the way: fine
    with pytest.raises(PathChanged):
        check_unchanged(directory / "not" / "yet" / "made.txt")


@needs_dir_fd
def test_a_file_in_the_way_is_not_a_directory_rather_than_a_change(root: Path) -> None:
    (root / "plain").write_text("x")
    with pytest.raises(NotADirectoryError) as raised:
        write_text_exactly(root / "plain" / "file.txt", "y")
    assert not isinstance(raised.value, PathChanged)


@needs_dir_fd
@pytest.mark.parametrize("write", [True, False])
def test_the_final_symlink_itself_is_replaced_or_deleted_not_its_target(root: Path, write: bool) -> None:
    target = root / "target.txt"
    target.write_text("precious")
    link = root / "link.txt"
    link.symlink_to(target)
    if write:
        write_text_exactly(link, "new")
        assert not link.is_symlink() and link.read_text() == "new"
    else:
        delete_exactly(link)
        assert not link.is_symlink() and not link.exists()
    assert target.read_text() == "precious"


def test_exact_writes_and_deletes_on_ordinary_paths(root: Path) -> None:
    path = root / "made" / "here.txt"
    write_text_exactly(path, "one")
    write_text_exactly(path, "two")
    assert path.read_text() == "two" and leftovers(path.parent) == []
    delete_exactly(path)
    assert not path.exists()
    delete_exactly(path)  # already gone: nothing happens
    delete_exactly(root / "no" / "such" / "dir" / "file.txt")


@needs_dir_fd
def test_exact_paths_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="not absolute"):
        write_text_exactly(Path("relative/file.txt"), "x")


def test_path_changed_is_an_os_error() -> None:
    assert issubclass(PathChanged, OSError)
