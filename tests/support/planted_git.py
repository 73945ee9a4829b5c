"""Repositories whose git configuration names a program, one key each: for the tests that the agent's own git
never runs one (issue 29, point 5).

Each ``Plant`` writes one program-running setting into a real repository (its ``.git/config``, a file it
includes, its hooks directory, its ``.gitattributes``) naming ``program``, a script that leaves a marker
file and fails. ``trigger`` is a git command that runs the planted program when run plainly: the tests
run it plainly to show the plant is real, and through ``git_command`` (or the whole agent) to show it
never runs there. The network keys are reached by a lazy fetch: the repository is a partial clone whose
``notes/.gitignore`` (skip-worktree, its blob missing) git fetches from the promisor remote as soon as
it lists ``notes/`` — the same ``ls-files`` the search fallback runs.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import pty
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@t")
LISTING = ("ls-files", "--cached", "--others", "--exclude-standard", "-z")  # what search_files' fallback runs
HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-index-change", "reference-transaction", "post-checkout")


def git(repository: Path, *args: str) -> str:
    """A plain git command in ``repository`` that must succeed; its output."""
    return subprocess.run(["git", *args], cwd=repository, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


def program(folder: Path) -> Path:
    """A program that leaves ``folder/RAN`` and fails (so no git waits on it for anything). It needs nothing
    on PATH (the server under test may have only git there): the marker is written by the shell itself."""
    script = folder / "program"
    script.write_text(f"#!/bin/sh\necho ran >> '{folder / 'RAN'}'\nexit 1\n")
    script.chmod(0o755)
    return script


def repository(path: Path) -> Path:
    """A repository with one commit: ``a.txt``, ``notes/keep.txt`` (which holds the needle) and ``notes/.gitignore``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", ".")
    git(path, "config", "user.name", "t")
    git(path, "config", "user.email", "t@t")
    (path / "a.txt").write_text("one\n")
    (path / "notes").mkdir()
    (path / "notes" / "keep.txt").write_text("a needle here\n")
    (path / "notes" / ".gitignore").write_text("*.log\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def promise(repo: Path, url: str) -> None:
    """Make ``repo`` a partial clone of ``url`` that lacks the blob of ``notes/.gitignore`` (skip-worktree, not
    on disk): listing ``notes/`` with its untracked file makes git fetch that blob from ``url`` on its own."""
    blob = git(repo, "rev-parse", "HEAD:notes/.gitignore").strip()
    git(repo, "update-index", "--skip-worktree", "notes/.gitignore")
    (repo / "notes" / ".gitignore").unlink()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    (repo / "notes" / "new.txt").write_text("untracked\n")
    git(repo, "config", "core.repositoryFormatVersion", "1")
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", url)


def _changed(repo: Path) -> None:
    (repo / "a.txt").write_text("changed by hand\n")


@dataclass(frozen=True)
class Plant:
    """One program-running setting, planted by ``plant(repository, program, http_url)``."""

    key: str
    plant: Callable[[Path, Path, str], None]
    trigger: Sequence[str]
    before: Callable[[Path], None] = field(default=lambda repo: None)  # makes the trigger reach the program
    tty: bool = False  # a pager runs only for a terminal
    # A filter: a driver named by the repository's own .gitattributes and configuration, which no -c can
    # name in advance. It runs only for a command that converts a file's content, which the agent runs
    # only in its checkpoint store (own configuration, filters off in its info/attributes).
    converts: bool = False


def _config(key: str, value: str = "{program}") -> Callable[[Path, Path, str], None]:
    def plant(repo: Path, script: Path, http: str) -> None:
        git(repo, "config", key, value.format(program=script, http=http))

    return plant


def _all(*steps: Callable[[Path, Path, str], None]) -> Callable[[Path, Path, str], None]:
    def plant(repo: Path, script: Path, http: str) -> None:
        for step in steps:
            step(repo, script, http)

    return plant


def _attributes(line: str) -> Callable[[Path, Path, str], None]:
    def plant(repo: Path, script: Path, http: str) -> None:
        (repo / ".gitattributes").write_text(line + "\n")

    return plant


def _promised(url: str) -> Callable[[Path, Path, str], None]:
    def plant(repo: Path, script: Path, http: str) -> None:
        promise(repo, url.format(program=script, http=http, folder=script.parent))

    return plant


def _hooks_path(repo: Path, script: Path, http: str) -> None:
    hooks = script.parent / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        (hooks / name).symlink_to(script)
    git(repo, "config", "core.hooksPath", str(hooks))


def _hooks_directory(repo: Path, script: Path, http: str) -> None:
    for name in HOOKS:
        (repo / ".git" / "hooks" / name).symlink_to(script)


def _included(section: str) -> Callable[[Path, Path, str], None]:
    """The repository includes a file (``section`` picks how) that sets core.sshCommand for its lazy fetch."""

    def plant(repo: Path, script: Path, http: str) -> None:
        included = script.parent / "included.gitconfig"
        included.write_text(f"[core]\n\tsshCommand = {script}\n")
        promise(repo, "ssh://example.invalid/repository")
        key = "include.path" if section == "include" else f"includeIf.gitdir:{repo}/.git.path"
        git(repo, "config", key, str(included))

    return plant


_COMMIT = ("commit", "-q", "--allow-empty", "-m", "x")
PLANTS = (
    Plant("core.fsmonitor", _config("core.fsmonitor"), ("status",)),
    Plant("core.hooksPath", _hooks_path, _COMMIT),
    Plant("hooks", _hooks_directory, _COMMIT),
    Plant("core.pager", _config("core.pager"), ("log",), tty=True),
    Plant("pager.<command>", _config("pager.log"), ("log",), tty=True),
    Plant("diff.external", _config("diff.external"), ("diff",), before=_changed),
    Plant("diff.<driver>.textconv", _all(_attributes("*.txt diff=planted"), _config("diff.planted.textconv")),
          ("diff",), before=_changed),
    Plant("diff.<driver>.command", _all(_attributes("*.txt diff=planted"), _config("diff.planted.command")),
          ("diff",), before=_changed),
    Plant("filter.<driver>.clean", _all(_attributes("*.txt filter=planted"), _config("filter.planted.clean")),
          ("add", "a.txt"), before=_changed, converts=True),
    Plant("filter.<driver>.smudge", _all(_attributes("*.txt filter=planted"), _config("filter.planted.smudge")),
          ("checkout", "--", "a.txt"), before=_changed, converts=True),
    Plant("filter.<driver>.process", _all(_attributes("*.txt filter=planted"), _config("filter.planted.process")),
          ("add", "a.txt"), before=_changed, converts=True),
    Plant("core.sshCommand", _all(_promised("ssh://example.invalid/repository"), _config("core.sshCommand")),
          LISTING),
    Plant("remote.<name>.uploadpack", _all(_promised("{folder}"), _config("remote.origin.uploadpack")), LISTING),
    Plant("ext:: transport", _all(_promised("ext::{program}"), _config("protocol.ext.allow", "always")), LISTING),
    Plant("credential.helper", _all(_promised("{http}"), _config("credential.helper")), LISTING),
    Plant("core.askPass", _all(_promised("{http}"), _config("core.askPass")), LISTING),
    Plant("include.path", _included("include"), LISTING),
    Plant("includeIf", _included("includeIf"), LISTING),
)


def run(argv: Sequence[str], repo: Path, *, env: dict[str, str] | None = None, tty: bool = False) -> None:
    """Run a git command to its end whatever it answers (the planted program fails on purpose)."""
    if not tty:
        subprocess.run(argv, cwd=repo, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False)
        return
    controller, terminal = pty.openpty()
    try:
        subprocess.run(argv, cwd=repo, env=env, stdout=terminal, stderr=terminal, stdin=subprocess.DEVNULL,
                       timeout=60, check=False)
    finally:
        os.close(terminal)
        os.close(controller)


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Asks for credentials on every request, so git goes to its credential helper and askpass."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="planted"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def refusing_http_server() -> Iterator[str]:
    """An HTTP server on the loopback that answers 401 to everything; its repository URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/repository"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
