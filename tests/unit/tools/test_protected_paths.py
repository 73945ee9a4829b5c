"""What the sandbox keeps read-only in a workspace, and what its audit moves out: on real folders and git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from acp_hermes_tools import protected_paths
from acp_hermes_tools.protected_paths import (
    MAX_DEPTH,
    Listings,
    audit,
    git_config_keys,
    git_pointer,
    inert_git_dir_problem,
    protected_reason,
    scan,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace, home, quarantine = tmp_path / "workspace", tmp_path / "home", tmp_path / "quarantine"
    workspace.mkdir()
    home.mkdir()
    return workspace, home, quarantine


@needs_git
def test_the_scan_finds_every_git_and_mandatory_name_and_what_they_point_at(places: tuple[Path, Path, Path]) -> None:
    workspace, home, _ = places
    git("init", "-q", ".", cwd=workspace)
    git("config", "core.hooksPath", ".husky", cwd=workspace)
    (workspace / ".husky").mkdir()
    nested = workspace / "libs" / "vendored"
    nested.mkdir(parents=True)
    git("init", "-q", ".", cwd=nested)
    worktree_gitdir = workspace / ".git" / "worktrees" / "wt"
    worktree_gitdir.mkdir(parents=True)
    (workspace / "wt").mkdir()
    (workspace / "wt" / ".git").write_text(f"gitdir: {worktree_gitdir}\n")
    outside_gitdir = workspace / "elsewhere.git"
    outside_gitdir.mkdir()
    (workspace / "pointed").mkdir()
    (workspace / "pointed" / ".git").write_text("gitdir: ../elsewhere.git\n")
    for name in (".envrc", ".mcp.json", ".gitmodules"):
        (workspace / name).write_text("x\n")
    for name in (".vscode", ".idea", ".hermes"):
        (workspace / "app" / name).mkdir(parents=True)
    deep = workspace.joinpath(*[f"d{level}" for level in range(MAX_DEPTH + 2)])
    deep.mkdir(parents=True)
    (deep / ".envrc").write_text("too deep to look for\n")
    (workspace / "node_modules" / "pkg" / ".git").mkdir(parents=True)  # generated trees are not entered

    protection = scan((workspace,), home)

    read_only = set(protection.read_only)
    assert {workspace / ".git", nested / ".git", workspace / "wt" / ".git", workspace / "pointed" / ".git",
            outside_gitdir, workspace / ".husky", workspace / ".envrc", workspace / ".mcp.json",
            workspace / ".gitmodules", *(workspace / "app" / name for name in (".vscode", ".idea", ".hermes"))} \
        <= read_only
    assert worktree_gitdir not in read_only  # already inside a read-only .git
    assert deep / ".envrc" not in read_only and workspace / "node_modules" / "pkg" / ".git" not in read_only
    assert {entry.path for entry in protection.entries} >= {workspace / ".git", workspace / ".envrc"}


@needs_git
def test_what_a_session_keeps_between_scans_never_hides_a_change(places: tuple[Path, Path, Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, home, _ = places
    # What was read is trusted at once while its stamp holds (normally only two seconds after its last
    # change), so a change the stamps did not catch would be missed here.
    monkeypatch.setattr(protected_paths, "_SETTLED_NS", -1)
    git("init", "-q", ".", cwd=workspace)
    (workspace / "src" / "deep").mkdir(parents=True)
    listings = Listings()
    for _ in range(2):  # read, then kept
        assert set(scan((workspace,), home, listings).read_only) == {workspace / ".git"}
    (workspace / "src" / "deep" / ".envrc").write_text("x\n")
    os.utime(workspace / "src" / "deep", ns=(1, 1))  # its times move on, whatever the clock's grain
    git("config", "core.hooksPath", ".husky", cwd=workspace)  # git's own configuration, rewritten
    (workspace / ".husky").mkdir()
    assert set(scan((workspace,), home, listings).read_only) == {
        workspace / ".git", workspace / "src" / "deep" / ".envrc", workspace / ".husky"}
    with (workspace / ".git" / "config").open("a") as config:  # edited in place: the same file grows
        config.write("[core]\n\thooksPath = .githooks\n")
    (workspace / ".githooks").mkdir()
    assert workspace / ".githooks" in scan((workspace,), home, listings).read_only


def test_a_home_folder_inside_the_workspace_keeps_every_dot_entry(places: tuple[Path, Path, Path]) -> None:
    workspace, _, _ = places
    home = workspace / "me"
    for name in (".bashrc", ".profile", ".gitconfig"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("x\n")
    (home / ".local" / "bin").mkdir(parents=True)
    (home / "projects").mkdir()
    read_only = scan((workspace,), home).read_only
    assert {home / ".bashrc", home / ".profile", home / ".gitconfig", home / ".local"} <= set(read_only)
    assert home / "projects" not in read_only
    assert scan((workspace / "elsewhere",), home).read_only == ()  # a home outside the workspace: nothing to do


def test_which_writes_plant_what_runs_later(places: tuple[Path, Path, Path]) -> None:
    workspace, home, _ = places
    roots = (workspace,)
    assert "git" in (protected_reason(workspace / ".git" / "hooks" / "pre-commit", roots, home) or "")
    assert "direnv" in (protected_reason(workspace / "sub" / ".envrc", roots, home) or "")
    assert protected_reason(workspace / ".VSCode" / "tasks.json", roots, home) is not None  # any case
    assert protected_reason(workspace / "src" / "main.py", roots, home) is None
    assert protected_reason(home / ".bashrc", roots, home) is None  # outside the workspace: not this rule's
    inside_home = workspace / "me"
    assert protected_reason(inside_home / ".bashrc", roots, inside_home) is not None
    assert protected_reason(inside_home / "notes.txt", roots, inside_home) is None


@pytest.mark.parametrize(("text", "keys"), [
    ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n", {"core.repositoryformatversion": "0",
                                                                 "core.bare": "false"}),
    ('[remote "origin"]\n\turl = https://x/y.git\n', {"remote.origin.url": "https://x/y.git"}),
    ("[core] fsmonitor = evil\n", {"core.fsmonitor": "evil"}),  # a key on the header's line counts
    ("# comment\n; comment\n\n[Core]\n\tFSMonitor\n", {"core.fsmonitor": ""}),
    ("[core\n", None),
    ("fsmonitor = evil\n", None),  # a key outside any section
    ('[remote "a]b"]\n\turl = x\n', {"remote.a]b.url": "x"}),
    ("[core]\n\tfs.monitor = x\n", None),
])
def test_the_git_config_reader_is_careful(tmp_path: Path, text: str, keys: dict[str, str] | None) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    assert git_config_keys(path) == keys
    assert git_config_keys(tmp_path / "missing") == {}


@needs_git
def test_what_git_init_and_clone_make_is_inert_and_a_planted_repository_is_not(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    git("init", "-q", str(fresh), cwd=tmp_path)
    assert inert_git_dir_problem(fresh / ".git") is None
    cloned = tmp_path / "cloned"
    git("clone", "-q", str(fresh), str(cloned), cwd=tmp_path)
    assert inert_git_dir_problem(cloned / ".git") is None
    git("config", "core.fsmonitor", "touch pwned", cwd=fresh)
    assert "core.fsmonitor" in (inert_git_dir_problem(fresh / ".git") or "")
    git("config", "--unset", "core.fsmonitor", cwd=fresh)
    (fresh / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    assert "post-checkout" in (inert_git_dir_problem(fresh / ".git") or "")
    (fresh / ".git" / "hooks" / "post-checkout").unlink()
    (fresh / ".git" / "commondir").write_text("../../elsewhere\n")
    assert "commondir" in (inert_git_dir_problem(fresh / ".git") or "")


def test_a_pointer_file_is_read_relative_to_its_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    assert git_pointer(tmp_path / "sub" / ".git") == tmp_path / ".git" / "modules" / "sub"
    (tmp_path / "sub" / ".git").write_text("not a pointer\n")
    assert git_pointer(tmp_path / "sub" / ".git") is None


@needs_git
def test_the_audit_moves_out_what_a_command_planted_and_keeps_what_git_made(places: tuple[Path, Path, Path]) -> None:
    workspace, home, quarantine = places
    git("init", "-q", ".", cwd=workspace)
    (workspace / "sub").mkdir()
    git("init", "-q", ".", cwd=workspace / "sub")
    before = scan((workspace,), home)
    # What a sandboxed command could do: create protected names, plant a repository, and swap a
    # protected .git for a new one by moving its parent away (the mount moves with the parent).
    (workspace / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (workspace / "planted" / ".git").mkdir(parents=True)
    (workspace / "planted" / ".git" / "config").write_text("[core]\n\tfsmonitor = touch pwned\n")
    os.rename(workspace / "sub", workspace / "sub2")
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / "sub" / ".git" / "config").write_text("[core]\n\thooksPath = /tmp/evil\n")
    git("init", "-q", "fresh", cwd=workspace)
    (workspace / "fresh" / "src").mkdir()

    moved = audit(before, (workspace,), home, quarantine)

    assert {item.path for item in moved} == {workspace / ".mcp.json", workspace / "planted" / ".git",
                                            workspace / "sub" / ".git"}
    for item in moved:
        assert not item.path.exists() and item.moved_to.exists() and quarantine in item.moved_to.parents
        assert "outside_sandbox: true" in item.line()
    assert (workspace / "sub2" / ".git").is_dir() and (workspace / "fresh" / ".git").is_dir()
    assert oct(quarantine.stat().st_mode & 0o777) == "0o700"
    assert audit(scan((workspace,), home), (workspace,), home, quarantine) == []  # nothing new: nothing moved
