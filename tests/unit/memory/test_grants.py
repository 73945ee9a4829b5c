"""Remembered command grants: a real YAML file, shared by every store (and process) that opens it."""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path

import pytest
import yaml

import acp_hermes_memory.fs
from acp_hermes_memory.grants import FILE_MODE, GrantStore, ProjectGrants

PROJECT = Path("/work/project")
OTHER = Path("/work/other")


@pytest.fixture
def grants_file(tmp_path: Path) -> Path:
    return tmp_path / "hermes" / "acp-hermes" / "permissions.yaml"


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_no_file_means_no_grants(grants_file: Path) -> None:
    store = GrantStore(grants_file)
    assert store.project(PROJECT) == ProjectGrants()
    assert store.all_projects() == {}
    assert not grants_file.exists()


def test_grants_are_persisted_and_read_back_by_a_second_store(grants_file: Path) -> None:
    GrantStore(grants_file).remember(PROJECT, ["git status", "pytest"], allow=True)
    GrantStore(grants_file).remember(PROJECT, ["git push"], allow=False)
    later = GrantStore(grants_file)
    assert later.project(PROJECT) == ProjectGrants(frozenset({"git status", "pytest"}), frozenset({"git push"}))
    assert later.project(OTHER) == ProjectGrants()
    document = yaml.safe_load(grants_file.read_text())
    assert document == {"projects": {str(PROJECT): {"allow_commands": ["git status", "pytest"],
                                                    "reject_commands": ["git push"]}}}


@pytest.mark.parametrize("first_allow", [True, False])
def test_a_key_is_either_allowed_or_rejected_never_both(grants_file: Path, first_allow: bool) -> None:
    store = GrantStore(grants_file)
    store.remember(PROJECT, ["make"], allow=first_allow)
    after = store.remember(PROJECT, ["make"], allow=not first_allow)
    expected = ProjectGrants(frozenset(), frozenset({"make"})) if first_allow else ProjectGrants(frozenset({"make"}))
    assert after == expected
    assert GrantStore(grants_file).project(PROJECT) == expected


def test_all_projects_lists_every_project_sorted(grants_file: Path) -> None:
    store = GrantStore(grants_file)
    store.remember(PROJECT, ["a"], allow=True)
    store.remember(OTHER, ["b"], allow=False)
    everything = GrantStore(grants_file).all_projects()
    assert list(everything) == sorted([str(PROJECT), str(OTHER)])
    assert everything[str(OTHER)].reject == {"b"}


def test_the_file_is_private(grants_file: Path) -> None:
    grants_file.parent.mkdir(parents=True)
    grants_file.write_text("projects: {}\n")
    os.chmod(grants_file, 0o644)  # a looser file made by hand is tightened on the next write
    GrantStore(grants_file).remember(PROJECT, ["ls"], allow=True)
    assert stat.S_IMODE(grants_file.stat().st_mode) == FILE_MODE == 0o600


def test_a_failed_write_leaves_the_old_file_whole_and_no_temp_file(grants_file: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = GrantStore(grants_file)
    store.remember(PROJECT, ["ls"], allow=True)
    before = grants_file.read_bytes()

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(acp_hermes_memory.fs.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        store.remember(PROJECT, ["rm -rf build"], allow=True)
    monkeypatch.undo()
    assert grants_file.read_bytes() == before
    assert temp_files(grants_file.parent) == []
    assert GrantStore(grants_file).project(PROJECT).allow == {"ls"}


@pytest.mark.parametrize(("text", "reported"), [
    ("projects: [unclosed\n", True),
    ("projects:\n  /p: {allow_commands: [a\n\t- b", True),
    ("- just\n- a list\n", False),  # valid YAML of the wrong shape: ignored silently
])
def test_an_unreadable_file_means_no_grants_and_is_reported_once(grants_file: Path, text: str, reported: bool,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    grants_file.parent.mkdir(parents=True)
    grants_file.write_text(text)
    store = GrantStore(grants_file)
    with caplog.at_level(logging.WARNING, logger="acp_hermes_memory.grants"):
        assert store.project(PROJECT) == ProjectGrants()
        assert store.all_projects() == {}
        assert store.project(OTHER) == ProjectGrants()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if not reported:
        assert warnings == []
        return
    assert len(warnings) == 1 and str(grants_file) in warnings[0] and "not valid YAML" in warnings[0]


def test_a_corrupt_file_is_not_lost_by_the_next_grant(grants_file: Path) -> None:
    grants_file.parent.mkdir(parents=True)
    corrupt = "projects:\n  /work/project:\n    allow_commands: [git status, pytest\n"
    grants_file.write_text(corrupt)
    GrantStore(grants_file).remember(OTHER, ["ls"], allow=True)
    kept = [p for p in grants_file.parent.iterdir() if p.is_file() and p.read_text() == corrupt]
    assert [p.name.startswith("permissions.yaml.unreadable-") for p in kept] == [True]
    assert GrantStore(grants_file).project(OTHER).allow == frozenset({"ls"})  # the new grant holds


def test_malformed_entries_are_read_as_no_grants(grants_file: Path) -> None:
    grants_file.parent.mkdir(parents=True)
    grants_file.write_text(yaml.safe_dump({"projects": {
        str(PROJECT): "junk", str(OTHER): {"allow_commands": "ls", "reject_commands": [1, "rm"]}}}))
    store = GrantStore(grants_file)
    assert store.project(PROJECT) == ProjectGrants()
    assert store.project(OTHER) == ProjectGrants(frozenset(), frozenset({"1", "rm"}))


def test_a_stale_store_does_not_overwrite_what_another_store_wrote(grants_file: Path) -> None:
    first, second = GrantStore(grants_file), GrantStore(grants_file)
    first.project(PROJECT)  # both opened before either wrote
    second.project(PROJECT)
    first.remember(PROJECT, ["a"], allow=True)
    second.remember(PROJECT, ["b"], allow=True)
    first.remember(OTHER, ["c"], allow=False)
    assert GrantStore(grants_file).all_projects() == {
        str(OTHER): ProjectGrants(frozenset(), frozenset({"c"})),
        str(PROJECT): ProjectGrants(frozenset({"a", "b"})),
    }


def test_concurrent_writers_from_two_stores_lose_nothing(grants_file: Path) -> None:
    stores = [GrantStore(grants_file), GrantStore(grants_file)]
    rounds = 40
    start = threading.Barrier(len(stores))
    failures: list[BaseException] = []

    def write(index: int) -> None:
        try:
            start.wait()
            for n in range(rounds):
                project = PROJECT if n % 2 else OTHER
                stores[index].remember(project, [f"cmd-{index}-{n}"], allow=True)
        except BaseException as error:  # reported below: a thread's failure must fail the test
            failures.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    everything = GrantStore(grants_file).all_projects()
    remembered = everything[str(PROJECT)].allow | everything[str(OTHER)].allow
    assert remembered == {f"cmd-{i}-{n}" for i in range(len(stores)) for n in range(rounds)}
    assert temp_files(grants_file.parent) == []
