"""Every command against a broken HERMES_HOME: never a traceback, never a crash status, and one line
that says what is wrong (and, for a damaged database, what to run).

Each subcommand `acp-hermes --help` lists runs as a real subprocess, with harmless arguments, against
a damaged state.db, a HERMES_HOME that is a regular file, and a config.yaml that is invalid YAML or
cannot be read. A command that does not use what is broken (``skills list`` and the database) only
has to keep quiet about it; one that uses it has to name it. The server, started with its stdin a
plain file of requests, answers them and exits 0 at the end of the file.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.test_cli import SCRIPT, cli_env
from tests.support.fake_anthropic import FakeAnthropic

DB, HOME, CONFIG = "database", "home", "config"


def damaged_db(home: Path) -> None:
    """A real state.db, written over with garbage."""
    from acp_hermes_memory.session_db import SessionDB

    path = home / "acp-hermes" / "state.db"
    SessionDB(path).close()
    size = path.stat().st_size
    path.write_bytes(os.urandom(size))


def home_is_a_file(home: Path) -> None:
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("not a directory\n")


def invalid_yaml(home: Path) -> None:
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("model: [claude\nthinking: {\n")


def unreadable_config(home: Path) -> None:
    (home / "acp-hermes" / "config.yaml").mkdir(parents=True)  # no one reads a directory as a file, root included




# Each broken state: how to make it, what it breaks, and what the one line must contain.
STATES: dict[str, tuple[Callable[[Path], None], str, tuple[str, ...]]] = {
    "damaged-db": (damaged_db, DB, ("is damaged", "acp-hermes doctor --repair")),
    "home-is-a-file": (home_is_a_file, HOME, ("is a file, not a directory",)),
    "invalid-yaml": (invalid_yaml, CONFIG, ("config.yaml", "not valid YAML")),
    "unreadable-config": (unreadable_config, CONFIG, ("config.yaml", "cannot be read")),
}

# Each command: its arguments, whether it runs with the fake model's key, and what it uses.
COMMANDS: dict[str, tuple[tuple[str, ...], bool, set[str]]] = {
    "serve": (("serve",), True, {DB, HOME, CONFIG}),
    "setup": (("setup", "--no-check"), False, {HOME, CONFIG}),
    "doctor": (("doctor",), False, {DB, HOME, CONFIG}),
    "demo-offline": (("demo", "--offline", "--yes", "hello"), False, {HOME, CONFIG}),  # a throwaway state.db
    "demo": (("demo", "--yes", "hello"), True, {DB, HOME, CONFIG}),
    "sessions-list": (("sessions", "list"), False, {DB, HOME}),
    "sessions-show": (("sessions", "show", "s1"), False, {DB, HOME}),
    "sessions-search": (("sessions", "search", "lexer"), False, {DB, HOME}),
    "sessions-export": (("sessions", "export", "s1", "--format", "jsonl"), False, {DB, HOME}),
    "sessions-delete": (("sessions", "delete", "s1", "--yes"), False, {DB, HOME}),
    "checkpoints-list": (("checkpoints", "list"), False, {HOME}),
    "checkpoints-show": (("checkpoints", "show", "."), False, {HOME}),
    "checkpoints-prune": (("checkpoints", "prune"), False, {HOME, CONFIG}),
    "memory-show": (("memory", "show"), False, {HOME, CONFIG}),
    "memory-edit": (("memory", "edit", "memory"), False, {HOME, CONFIG}),
    "memory-providers": (("memory", "providers"), False, {CONFIG}),
    "skills-list": (("skills", "list"), False, {HOME, CONFIG}),
    "skills-show": (("skills", "show", "lint"), False, {HOME, CONFIG}),
    "skills-usage": (("skills", "usage"), False, {HOME, CONFIG}),
    "skills-history": (("skills", "history", "lint"), False, {HOME, CONFIG}),
    "skills-rollback": (("skills", "rollback", "lint"), False, {HOME, CONFIG}),
    "skills-pin": (("skills", "pin", "lint"), False, {HOME, CONFIG}),
    "skills-unpin": (("skills", "unpin", "lint"), False, {HOME, CONFIG}),
    "skills-archive": (("skills", "archive", "lint"), False, {HOME, CONFIG}),
    "skills-restore": (("skills", "restore", "lint"), False, {HOME, CONFIG}),
    "skills-prune": (("skills", "prune", "--days", "30", "--dry-run"), False, {HOME, CONFIG}),
    "trust-list": (("trust", "list"), False, {HOME}),
    "trust-add": (("trust", "add", "."), False, {HOME}),
    "trust-remove": (("trust", "remove", "."), False, {HOME}),
}

REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
]


def test_every_subcommand_is_covered() -> None:
    from acp_hermes.app.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    assert commands is not None
    covered = {args[0] for args, _, _ in COMMANDS.values()}
    assert covered == set(commands)
    for name in ("sessions", "checkpoints", "memory", "skills", "trust"):
        actions = next(a for a in commands[name]._actions if a.dest == "action").choices  # type: ignore[union-attr]
        assert {args[1] for args, _, _ in COMMANDS.values() if args[0] == name} == set(actions or ())


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("state", list(STATES))
def test_a_broken_home_is_one_line_never_a_traceback(
    tmp_path: Path, fake_anthropic: FakeAnthropic, state: str, command: str
) -> None:
    make, breaks, says = STATES[state]
    args, with_key, uses = COMMANDS[command]
    home = tmp_path / "hermes-home"
    make(home)
    env = {**cli_env(home), "EDITOR": "true", "VISUAL": "true"}
    if with_key:
        env.update(fake_anthropic.env())
    requests = tmp_path / "requests.ndjson"
    requests.write_text("".join(json.dumps(message) + "\n" for message in REQUESTS))
    with requests.open("rb") as stdin:  # the server reads a plain file; the commands find no terminal
        result = subprocess.run(
            [SCRIPT, *args], stdin=stdin if command == "serve" else subprocess.DEVNULL, capture_output=True,
            text=True, env=env, cwd=str(tmp_path), timeout=120,
        )
    output = result.stdout + result.stderr
    assert result.returncode in (0, 1), output
    assert "Traceback" not in output, output
    if breaks in uses:
        assert any(all(part in line for part in says) for line in output.splitlines()), output
    if command == "serve":
        answers = {message["id"]: message for message in map(json.loads, result.stdout.splitlines())}
        assert result.returncode == 0 and set(answers) == {1, 2}, output
        assert "result" in answers[1] and "error" in answers[2]  # session/new names the problem
        if state == "home-is-a-file":
            assert "is a file, not a directory" in json.dumps(answers[2]["error"]), answers[2]


# Permissions only bind a user who is not root: these run as the test's own user, or as nobody
# (setpriv) where the tests run as root.
NOBODY = 65534


def config_permission_denied(home: Path) -> None:
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("log_level: INFO\n")
    config.chmod(0)


def home_mode(mode: int, *, own: bool = False) -> Callable[[Path], None]:
    def make(home: Path) -> None:
        (home / "acp-hermes").mkdir(parents=True)
        (home / "acp-hermes" if own else home).chmod(mode)

    return make


HOME_DENIED = ("cannot be read and written by this user", "chmod u+rwx")
# Each state: how to make it, and what the one line must contain (the path is added: it must be named).
UNUSABLE: dict[str, tuple[Callable[[Path], None], str, tuple[str, ...]]] = {
    "home-mode-000": (home_mode(0), "", HOME_DENIED),
    "home-read-only": (home_mode(0o555), "", HOME_DENIED),
    "own-mode-000": (home_mode(0, own=True), "acp-hermes", HOME_DENIED),
    "config-permission-denied": (config_permission_denied, "acp-hermes/config.yaml", ("cannot be read",)),
}


def _unprivileged() -> tuple[str, ...]:
    """The argv prefix that runs a command as a user file permissions bind (none when not root)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: as root, permissions stop nothing")
    prefix = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")
    probe = subprocess.run([*prefix, SCRIPT, "--version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"an unprivileged user cannot run this checkout: {probe.stderr[-200:]}")
    return prefix


@pytest.fixture
def unprivileged_base() -> Iterator[tuple[Path, tuple[str, ...]]]:
    """A folder the command's user owns (pytest's temp folders are private to root), and how to run as that user."""
    prefix = _unprivileged()
    folder = Path(tempfile.mkdtemp(prefix="cli-unprivileged-"))
    try:
        yield folder, prefix
    finally:
        for path in [folder, *folder.rglob("*")]:  # give permissions back so the folder can go
            if not path.is_symlink():
                path.chmod(0o700)
        shutil.rmtree(folder, ignore_errors=True)


# Every command against the whole home; a few (the server, doctor, a database, a config and a store
# command) against the narrower cases.
UNUSABLE_CASES = [(state, command) for state in UNUSABLE for command in COMMANDS
                  if state.startswith("home-") or command in ("serve", "doctor", "sessions-list", "memory-providers",
                                                              "checkpoints-prune")]


@pytest.mark.parametrize(("state", "command"), UNUSABLE_CASES)
def test_a_home_this_user_cannot_use_is_one_line_never_a_traceback(
    unprivileged_base: tuple[Path, tuple[str, ...]], fake_anthropic: FakeAnthropic, state: str, command: str
) -> None:
    """An unreadable or unwritable HERMES_HOME (or its acp-hermes/, or config.yaml) as a user without root's
    powers: every command says so in one line naming the path, ``serve`` answers ``session/new`` with it."""
    base, as_user = unprivileged_base
    make, where, says = UNUSABLE[state]
    args, with_key, uses = COMMANDS[command]
    home = base / "hermes-home"
    home.mkdir()
    requests = base / "requests.ndjson"
    requests.write_text("".join(json.dumps(message) + "\n" for message in REQUESTS))
    make(home)
    if as_user:
        for path in [base, *base.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
    env = {**cli_env(home), "EDITOR": "true", "VISUAL": "true", "HOME": str(base)}
    if with_key:
        env.update(fake_anthropic.env())
    with requests.open("rb") as stdin:
        result = subprocess.run(
            [*as_user, SCRIPT, *args], stdin=stdin if command == "serve" else subprocess.DEVNULL,
            capture_output=True, text=True, env=env, cwd=str(base), timeout=120,
        )
    output = result.stdout + result.stderr
    assert result.returncode in (0, 1), output
    assert "Traceback" not in output, output
    named = str(home / where) if where else str(home)
    if command == "serve":
        answers = {message["id"]: message for message in map(json.loads, result.stdout.splitlines())}
        assert result.returncode == 0 and set(answers) == {1, 2}, output
        assert "result" in answers[1] and "error" in answers[2], answers
        error = answers[2]["error"]["message"]
        assert named in error and all(part in error for part in says), error
    elif state != "config-permission-denied" or CONFIG in uses:  # the home: every command needs it
        assert any(named in line and all(part in line for part in says) for line in output.splitlines()), output


def test_a_home_that_cannot_be_created_or_belongs_to_another_user_says_why(
    unprivileged_base: tuple[Path, tuple[str, ...]]
) -> None:
    base, as_user = unprivileged_base
    locked = base / "locked"
    locked.mkdir()
    cases = [(locked / "hermes-home", f"HERMES_HOME {locked / 'hermes-home'} does not exist and cannot be created: "
                                      f"{locked} is not a directory this user can write")]
    if as_user:
        for path in (base, locked):
            os.chown(path, NOBODY, NOBODY)
        theirs = base / "root-owned"  # made by `sudo acp-hermes`, say
        theirs.mkdir(mode=0o700)
        cases.append((theirs, f"HERMES_HOME {theirs} cannot be read and written by this user: give it back its "
                              "permissions (it belongs to user 0: chown it to this user)"))
    locked.chmod(0o555)
    for home, says in cases:
        result = subprocess.run([*as_user, SCRIPT, "sessions", "list"], stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, env={**cli_env(home), "HOME": str(base)}, cwd=str(base), timeout=60)
        assert result.returncode == 1 and result.stdout == "", result.stderr
        assert result.stderr.startswith(f"acp-hermes: {says}") and result.stderr.count("\n") == 1, result.stderr


def test_serve_reads_a_plain_file_of_requests_and_exits_at_its_end(tmp_path: Path) -> None:
    """``acp-hermes < requests.ndjson``: every request answered on stdout, status 0 at the end of the file."""
    requests = tmp_path / "requests.ndjson"
    lines = [REQUESTS[0], {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}]
    requests.write_text("".join(json.dumps(message) + "\n" for message in lines))
    with requests.open("rb") as stdin:
        result = subprocess.run([SCRIPT], stdin=stdin, capture_output=True, text=True,
                                env=cli_env(tmp_path / "home"), timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2] and all("result" in a for a in answers)


def test_serve_with_stdin_that_cannot_be_polled_exits_cleanly(tmp_path: Path) -> None:
    """``acp-hermes < /dev/null``: epoll refuses /dev/null (EPERM); the server reads it another way, finds
    the end of input, and exits 0 without a traceback, instead of waiting for ever."""
    with open(os.devnull, "rb") as stdin:
        result = subprocess.run([SCRIPT], stdin=stdin, capture_output=True, text=True,
                                env=cli_env(tmp_path / "home"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr, result.stderr


def test_serve_with_stdin_closed_exits_cleanly(tmp_path: Path) -> None:
    """Started with fd 0 closed (``acp-hermes <&-``): no request can come; exit 0, no traceback."""
    result = subprocess.run(["/bin/sh", "-c", f"exec '{SCRIPT}' <&-"], capture_output=True, text=True,
                            env=cli_env(tmp_path / "home"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_sessions_on_a_damaged_database_say_so_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    damaged_db(home)
    for action in (("list",), ("show", "s1"), ("search", "lexer"), ("export", "s1")):
        result = subprocess.run([SCRIPT, "sessions", *action], stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, env=cli_env(home), timeout=60)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.count("\n") == 1, result.stderr
        path = home / "acp-hermes" / "state.db"
        assert result.stderr.startswith(f"acp-hermes's session database {path} is damaged (")
        assert "Run `acp-hermes doctor --repair` in a terminal" in result.stderr


def test_doctor_diagnoses_a_home_that_is_a_file(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    home_is_a_file(home)
    result = subprocess.run([SCRIPT, "doctor"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            env=cli_env(home), cwd=str(tmp_path), timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr, result.stderr
    problems = result.stdout.split("\nProblems\n", 1)[1]
    assert f"  - HERMES_HOME {home} is a file, not a directory" in problems


def test_the_known_failures_have_their_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The top-level handler's table: each known failure type is one line, and a bug is not hidden."""
    from acp_hermes.app.cli import failure_line

    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    from acp_hermes_memory.session_db import SessionDBCorrupt

    corrupt = failure_line(SessionDBCorrupt(Path("/h/state.db"), "file is not a database"))
    assert corrupt is not None and corrupt.startswith("acp-hermes's session database /h/state.db is damaged")
    assert failure_line(sqlite3.DatabaseError("database disk image is malformed")) is not None
    denied = failure_line(PermissionError(13, "Permission denied", "/h/x"))
    assert denied == "acp-hermes: Permission denied: /h/x"
    assert failure_line(ValueError("a bug")) is None
    assert all("\n" not in line for line in (corrupt, denied))


def seeded_home(base: Path) -> Path:
    """A HERMES_HOME with something for every command to print: session s1, a checkpoint store, memory, a skill."""
    from acp_hermes_memory.session_db import SessionDB
    from tests.integration.test_cli_checkpoints import make_workspace, take
    from tests.integration.test_cli_memory_skills import write_skill

    home = base / "hermes-home"
    db = SessionDB(home / "acp-hermes" / "state.db")
    db.create_session("s1", cwd=str(base), model="claude-sonnet-5-5", mode="default", model_config={},
                      system_prompt="", title="Lexer choice")
    for turn in range(40):
        db.append_message("s1", "user", f"which lexer, {turn}?")
        db.append_message("s1", "assistant", f"the zephyrine lexer, {turn}")
    db.close()
    if shutil.which("git") is not None:
        take(home, make_workspace(base, "app"), "s1", ["fix the lexer bug"])
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("Project uses tabs.\n§\nTests run with pytest -q.")
    write_skill(home / "skills", "lint", "Run the linters")
    return home


def test_every_command_into_a_closed_pipe_exits_quietly(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """``acp-hermes … | head -1``: the reader leaves early. Its stdout is a pipe whose reading end is closed
    here before the command starts, so every write fails (what ``head`` leaves behind, without a race):
    no traceback and no "Broken pipe" line, and the status of a process SIGPIPE ended (141)."""
    home = seeded_home(tmp_path)
    workspace = tmp_path / "app" if (tmp_path / "app").is_dir() else tmp_path  # `checkpoints show .` finds it
    env = {**cli_env(home), "EDITOR": "true", "VISUAL": "true"}
    extra = {"help": (("--help",), False, set[str]()), "sessions-export-markdown": (("sessions", "export", "s1"),
                                                                                    False, set[str]())}
    for name, (args, with_key, _) in [*extra.items(), *COMMANDS.items()]:  # sessions delete: after the others
        if name == "serve":  # the protocol, not a listing: its end is the end of stdin
            continue
        reading, writing = os.pipe()
        os.close(reading)
        try:
            result = subprocess.run([SCRIPT, *args], stdin=subprocess.DEVNULL, stdout=writing, stderr=subprocess.PIPE,
                                    text=True, env={**env, **(fake_anthropic.env() if with_key else {})},
                                    cwd=str(workspace), timeout=120)
        finally:
            os.close(writing)
        for noise in ("Traceback", "BrokenPipeError", "Broken pipe", "Exception ignored"):
            assert noise not in result.stderr, (name, result.stderr)
        if name == "help":  # argparse's own printing: quiet, its status 0
            assert result.returncode == 0, result.stderr
        elif name == "setup":  # with no terminal and nothing piped in it prints nothing: it says why on stderr
            assert result.returncode == 1 and "no terminal to ask on" in result.stderr, result.stderr
        elif name == "skills-rollback":  # lint has no recorded change: the one line goes to stderr
            assert result.returncode == 1 and "No recorded change" in result.stderr, result.stderr
        elif workspace != tmp_path or not name.startswith("checkpoints"):
            assert result.returncode == 141, (name, result.returncode, result.stderr)
