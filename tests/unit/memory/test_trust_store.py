"""Workspace trust decisions: which repository a folder belongs to (read from disk, no git process), and
the store every process shares (locked, atomic, private)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from acp_hermes_memory.trust_store import TrustStore, repository_of


def git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], check=True,
                   capture_output=True)


def test_a_folder_outside_git_is_its_own_repository(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    found = repository_of(folder, tmp_path / "home")
    assert (found.root, found.git, found.home) == (folder, False, False)


def test_a_subfolder_of_a_repository_belongs_to_its_root(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "pkg" / "inner").mkdir(parents=True)
    found = repository_of(tmp_path / "repo" / "pkg" / "inner", tmp_path / "home")
    assert (found.root, found.git) == (tmp_path / "repo", True)


def test_a_linked_worktree_counts_as_its_main_repository_and_a_submodule_as_itself(tmp_path: Path) -> None:
    main = tmp_path / "main"
    git("init", "-q", str(main))
    git("-C", str(main), "commit", "-q", "--allow-empty", "-m", "start")
    git("-C", str(main), "worktree", "add", "-q", str(tmp_path / "linked"))
    assert repository_of(tmp_path / "linked", tmp_path / "home").root == main
    # A submodule's .git file points into the superproject's modules, with no commondir.
    module_dir = main / ".git" / "modules" / "sub"
    module_dir.mkdir(parents=True)
    (main / "sub").mkdir()
    (main / "sub" / ".git").write_text(f"gitdir: {module_dir}\n", encoding="utf-8")
    assert repository_of(main / "sub", tmp_path / "home").root == main / "sub"


def test_the_home_folder_is_never_a_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)  # a dotfiles repository
    (home / "project").mkdir()
    found = repository_of(home, home)
    assert found.home and found.root == home
    below = repository_of(home / "project", home)  # not one repository with the whole home folder
    assert (below.root, below.git, below.home) == (home / "project", False, False)


def test_decisions_are_kept_per_repository_privately_and_across_stores(tmp_path: Path) -> None:
    path = tmp_path / "acp-hermes" / "trust.json"
    one, two = TrustStore(path), TrustStore(path)  # two processes
    one.decide(Path("/r/a"), trusted=True, servers=["f1"])
    two.decide(Path("/r/b"), trusted=False)
    assert set(one.all()) == {"/r/a", "/r/b"}
    entry = two.entry(Path("/r/a"))
    assert entry is not None and entry.trusted and entry.servers == {"f1"}
    assert path.stat().st_mode & 0o777 == 0o600
    two.approve_servers(Path("/r/a"), ["f2"])
    two.approve_servers(Path("/r/b"), ["f3"])  # nothing is approved in an untrusted repository
    assert (one.entry(Path("/r/a")) or entry).servers == {"f1", "f2"}
    assert (one.entry(Path("/r/b")) or entry).servers == frozenset()
    one.decide(Path("/r/a"), trusted=False)  # untrusting forgets the approvals
    one.decide(Path("/r/a"), trusted=True)
    assert (one.entry(Path("/r/a")) or entry).servers == frozenset()
    assert one.forget(Path("/r/a")) and not one.forget(Path("/r/a"))
    assert one.entry(Path("/r/a")) is None


def test_an_unreadable_file_trusts_nothing_and_is_kept_aside_before_a_write(tmp_path: Path) -> None:
    path = tmp_path / "trust.json"
    path.write_text("{not json", encoding="utf-8")
    store = TrustStore(path)
    assert store.entry(Path("/r/a")) is None and store.all() == {}
    store.decide(Path("/r/a"), trusted=True)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("trust.json.unreadable-")]
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{not json"
    assert json.loads(path.read_text(encoding="utf-8"))["repositories"]["/r/a"]["trusted"] is True
