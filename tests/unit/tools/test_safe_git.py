"""``git_command``: the one way acp-hermes runs git for itself, with every program-running setting off.

Each planted key (``tests/support/planted_git.py``) runs its program when its git command runs plainly,
and never when the same command is built by ``git_command``; each layer that stops a lazy fetch holds on
its own. Filters, which no setting can name in advance, never run in what the agent's git does to a
workspace (its listing, the checkpoint store)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_tools.checkpoints import CheckpointStore
from acp_hermes_tools.safe_git import git_command
from tests.support.planted_git import LISTING, PLANTS, Plant, git, program, refusing_http_server, repository, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
GIT = shutil.which("git") or "git"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with refusing_http_server() as url:
        yield url


SWITCHED_OFF = [plant for plant in PLANTS if not plant.converts]
FILTERS = [plant for plant in PLANTS if plant.converts]


@pytest.mark.parametrize("plant", SWITCHED_OFF, ids=[plant.key for plant in SWITCHED_OFF])
def test_a_planted_key_runs_its_program_plainly_and_never_through_git_command(
        tmp_path: Path, plant: Plant, http_url: str) -> None:
    marker = tmp_path / "RAN"
    repo = repository(tmp_path / "repo")
    plant.plant(repo, program(tmp_path), http_url)
    plant.before(repo)

    command = git_command(GIT, *plant.trigger)
    run(command.argv, repo, env=command.env, tty=plant.tty)
    assert not marker.exists()

    run([GIT, *plant.trigger], repo, tty=plant.tty)
    assert marker.exists()  # the plant is real: the same command, run plainly, runs it


FETCHED = [plant for plant in PLANTS if plant.trigger == LISTING]  # reached by a lazy fetch


# Keys a -c override switches off even when a fetch does run (the others, upload-pack and ext::, only the
# transport stops keep from running).
OVERRIDDEN = {"core.sshCommand", "credential.helper", "core.askPass", "include.path", "includeIf"}
LAYERS = [(plant, stops) for plant in FETCHED for stops in (("GIT_NO_LAZY_FETCH",), ("GIT_ALLOW_PROTOCOL",),
                                                            ("GIT_NO_LAZY_FETCH", "GIT_ALLOW_PROTOCOL"))
          if len(stops) == 1 or plant.key in OVERRIDDEN]


@pytest.mark.parametrize(("plant", "stops"), LAYERS, ids=[f"{plant.key}-without-{'-'.join(stops)}"
                                                          for plant, stops in LAYERS])
def test_each_layer_alone_keeps_a_lazy_fetch_from_running_anything(
        tmp_path: Path, plant: Plant, http_url: str, stops: tuple[str, ...]) -> None:
    """A git older than 2.39.4 has no ``GIT_NO_LAZY_FETCH``: the empty protocol allowlist holds without it,
    and the other way round; with neither, the -c overrides still hold for the keys they name."""
    marker = tmp_path / "RAN"
    repo = repository(tmp_path / "repo")
    plant.plant(repo, program(tmp_path), http_url)
    command = git_command(GIT, *plant.trigger)
    run(command.argv, repo, env={name: text for name, text in command.env.items() if name not in stops})
    assert not marker.exists()


@pytest.mark.parametrize("plant", FILTERS, ids=[plant.key for plant in FILTERS])
def test_a_planted_filter_never_runs_in_what_the_agents_git_does_to_a_workspace(
        tmp_path: Path, plant: Plant, http_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter runs for commands that convert content, which the agent runs only in its checkpoint store:
    the store reads neither the workspace repository's configuration nor the user's global one (where
    git-lfs, say, defines its filter), and its own attributes switch filters off."""
    marker = tmp_path / "RAN"
    repo = repository(tmp_path / "repo")
    script = program(tmp_path)
    plant.plant(repo, script, http_url)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    shutil.copy(repo / ".git" / "config", home / ".gitconfig")  # the same filter, defined globally too

    for args in (LISTING, ("rev-parse", "--is-inside-work-tree")):
        command = git_command(GIT, *args, directory=str(repo))
        run(command.argv, tmp_path, env=command.env)
    store = CheckpointStore.for_workspace(tmp_path / "store", repo, max_file_bytes=1 << 20, max_files=1000)
    first = store.snapshot("refs/checkpoints/t/1", {})
    plant.before(repo)
    second = store.snapshot("refs/checkpoints/t/2", {})
    changes = store.changes(first.commit, second.commit)
    assert set(changes) == {"a.txt"}
    store.read_many(state.blob for pair in changes.values() for state in pair if state.blob)
    store.restore({path: old for path, (old, _) in changes.items()})
    assert (repo / "a.txt").read_text() == "one\n"
    assert not marker.exists()

    plant.before(repo)
    run([GIT, *plant.trigger], repo)
    assert marker.exists()


def get(command_args: tuple[str, ...], repo: Path, environ: dict[str, str]) -> str:
    command = git_command(GIT, "config", *command_args, environ=environ)
    return subprocess.run(command.argv, cwd=repo, env=command.env, capture_output=True, text=True).stdout.strip()


def test_system_and_global_configuration_and_redirecting_variables_are_not_read(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[planted]\n\tglobal = yes\n")
    (home / ".config" / "git" / "config").write_text("[planted]\n\txdg = yes\n")
    (tmp_path / "elsewhere.gitconfig").write_text("[planted]\n\tredirected = yes\n")
    at_home = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    redirected = {**at_home, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "planted.count", "GIT_CONFIG_VALUE_0": "yes",
                  "GIT_CONFIG_GLOBAL": str(tmp_path / "elsewhere.gitconfig"),
                  "GIT_CONFIG_PARAMETERS": "'planted.parameters'='yes'"}
    for environ, read in ((at_home, ("global", "xdg")), (redirected, ("count", "redirected", "parameters"))):
        plainly = subprocess.run(["git", "config", "--get-regexp", "^planted"], cwd=repo, env=environ,
                                 capture_output=True, text=True).stdout
        assert all(f"planted.{name} yes" in plainly for name in read)  # what git reads without us
        assert get(("--get-regexp", "^planted"), repo, environ) == ""
        scopes = {line.split("\t")[0] for line in get(("--show-scope", "--list"), repo, environ).splitlines()}
        assert scopes == {"local", "command"}  # the repository's own file and our overrides, nothing else


def test_the_environment_keeps_ours_and_drops_what_points_git_elsewhere() -> None:
    environ = {"PATH": "/bin", "HOME": "/home/u", "LANG": "C", "GIT_DIR": "/x", "GIT_EXEC_PATH": "/x",
               "GIT_SSH_COMMAND": "x", "GIT_ASKPASS": "x", "SSH_ASKPASS": "x", "GIT_EXTERNAL_DIFF": "x",
               "GIT_ALLOW_PROTOCOL": "file:ext", "GIT_TRACE": "/tmp/trace"}
    env = git_command(GIT, "status", environ=environ).env
    assert [env.get(name) for name in ("PATH", "HOME", "LANG")] == ["/bin", "/home/u", "C"]
    assert not {"GIT_DIR", "GIT_EXEC_PATH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXTERNAL_DIFF",
                "GIT_TRACE"} & env.keys()
    assert env["GIT_ALLOW_PROTOCOL"] == "" and env["GIT_CONFIG_GLOBAL"] == env["GIT_CONFIG_SYSTEM"] == "/dev/null"
    assert env["GIT_CONFIG_NOSYSTEM"] == env["GIT_NO_LAZY_FETCH"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"


def test_a_callers_own_settings_and_variables_cannot_turn_a_program_back_on(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    command = git_command(GIT, "config", "--get", "core.fsmonitor", config=("core.fsmonitor=/bin/echo",),
                          environment={"GIT_ALLOW_PROTOCOL": "file", "GIT_DIR": str(repo / ".git")})
    assert command.env["GIT_ALLOW_PROTOCOL"] == "" and command.env["GIT_DIR"] == str(repo / ".git")
    shown = subprocess.run(command.argv, cwd=tmp_path, env=command.env, capture_output=True, text=True)
    assert shown.stdout.strip() == "false"


def test_diff_commands_get_no_external_diff_and_no_textconv_and_others_keep_their_arguments() -> None:
    for subcommand in ("diff", "diff-tree", "diff-index", "diff-files", "log", "show"):
        argv = git_command(GIT, subcommand, "-r", "a", "b").argv
        assert argv[argv.index(subcommand):] == [subcommand, "--no-ext-diff", "--no-textconv", "-r", "a", "b"]
    argv = git_command(GIT, "ls-files", "-z", directory="/somewhere").argv
    assert argv[0] == GIT and argv[1] == "--no-pager" and argv[2:4] == ["-C", "/somewhere"]
    assert argv[-2:] == ["ls-files", "-z"]


def test_git_accepts_every_command_it_builds(tmp_path: Path) -> None:
    """The overrides are values git takes (a typo in one would fail every helper command)."""
    repo = repository(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    for args in (("status",), ("diff-tree", "-r", "HEAD~1", "HEAD"), ("log", "-1"), ("rev-parse", "HEAD")):
        command = git_command(GIT, *args)
        subprocess.run(command.argv, cwd=repo, env=command.env, capture_output=True, check=True)
