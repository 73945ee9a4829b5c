"""What the agent creates under HERMES_HOME is private whatever the umask (folders 0700 with every
missing parent, files 0600, lock files too); what already exists keeps its mode unless asked to tighten."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_memory.fs import (
    atomic_write_text,
    exclusive_lock,
    make_private_directories,
    private_directory,
    private_file,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o000, 0o002], ids=["umask-022", "umask-000", "umask-002"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_every_missing_folder_on_the_way_is_made_private(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "home"
    assert make_private_directories(home / "acp-hermes" / "logs") == home / "acp-hermes" / "logs"
    assert [mode_of(p) for p in (home, home / "acp-hermes", home / "acp-hermes" / "logs")] == [0o700] * 3
    private_directory(tmp_path / "other" / "own")
    private_file(tmp_path / "third" / "state.db")
    assert mode_of(tmp_path / "other") == mode_of(tmp_path / "third") == 0o700
    assert mode_of(tmp_path / "third" / "state.db") == 0o600


def test_existing_folders_and_files_keep_their_mode_unless_tightening_is_asked(tmp_path: Path, umask: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    private_directory(shared, tighten=False)
    make_private_directories(shared)
    assert mode_of(shared) == 0o755
    private_directory(shared / "new", tighten=False)
    assert mode_of(shared / "new") == 0o700
    profile = shared / "USER.md"
    profile.write_text("Name: Dana")
    os.chmod(profile, 0o644)
    private_file(profile, tighten=False)
    assert mode_of(profile) == 0o644
    private_directory(shared)
    private_file(profile)
    assert mode_of(shared) == 0o700 and mode_of(profile) == 0o600 and profile.read_text() == "Name: Dana"


def test_a_private_write_makes_0600_files_in_0700_folders_and_keeps_an_existing_mode(
    tmp_path: Path, umask: int
) -> None:
    skill = tmp_path / "skills" / "ops" / "rotate-logs" / "SKILL.md"
    atomic_write_text(skill, "one", private=True)
    assert mode_of(skill) == 0o600
    assert {mode_of(p) for p in (skill.parent, skill.parent.parent, tmp_path / "skills")} == {0o700}
    os.chmod(skill, 0o640)  # the user's choice
    atomic_write_text(skill, "two", private=True)
    assert mode_of(skill) == 0o640 and skill.read_text() == "two"


def test_an_ordinary_write_still_follows_the_umask_for_folders(tmp_path: Path, umask: int) -> None:
    project_file = tmp_path / "project" / "src" / "new.py"
    atomic_write_text(project_file, "x = 1\n")
    assert mode_of(project_file.parent) == 0o777 & ~umask and mode_of(project_file) == 0o644


def test_lock_files_and_their_folders_are_private_and_an_existing_lock_keeps_its_mode(
    tmp_path: Path, umask: int
) -> None:
    lock = tmp_path / "memories" / "MEMORY.md.lock"
    with exclusive_lock(lock):
        pass
    assert mode_of(lock) == 0o600 and mode_of(lock.parent) == 0o700
    os.chmod(lock, 0o644)
    with exclusive_lock(lock):
        pass
    assert mode_of(lock) == 0o644
