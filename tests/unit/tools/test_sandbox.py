"""The OS sandbox around commands, run for real: what a sandboxed command can and cannot do.

Runs bubblewrap (the Debian/Ubuntu package ``bubblewrap``); where it is missing or cannot create
namespaces the tests that need it are skipped with the reason. The Seatbelt profile (macOS) is
checked as text: this machine cannot run it.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_tools.contracts import CommandRequest
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.sandbox import SandboxProfile, SessionSandbox, detect, hidden_paths, seatbelt_profile
from tests.support.listeners import answering
from tests.support.tools import RecordingGate, make_context

STATUS = detect()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no OS sandbox here: {STATUS.detail}")


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    places = {name: tmp_path / name for name in ("workspace", "home", "hermes", "outside")}
    for path in places.values():
        path.mkdir()
    (places["home"] / ".ssh").mkdir()
    (places["home"] / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (places["home"] / ".netrc").write_text("machine x password hunter2\n")
    (places["hermes"] / "config.yaml").write_text("api_key: sk-ant-secret\n")
    return places


@pytest.fixture
def sandbox(layout: dict[str, Path]) -> SessionSandbox:
    return SessionSandbox(
        enabled=True, writable=(layout["workspace"],), hidden=hidden_paths(layout["home"], layout["hermes"]),
        network_allowed=False, session_id="sandbox-test",
    )


def run(sandbox: SessionSandbox, command: str, cwd: Path, *, network: bool = False) -> subprocess.CompletedProcess[str]:
    argv = sandbox.confinement(network).wrap(["/bin/sh", "-c", command])
    environment = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=30, env=environment, check=False)


@needs_sandbox
def test_only_the_workspace_and_the_private_temp_dir_are_writable(sandbox: SessionSandbox,
                                                                    layout: dict[str, Path]) -> None:
    workspace, outside = layout["workspace"], layout["outside"]
    done = run(sandbox, 'echo in > made.txt && echo tmp > "$TMPDIR/t.txt" && echo "$TMPDIR"', workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "made.txt").read_text() == "in\n"
    assert Path(done.stdout.strip()) == sandbox.scratch() and (sandbox.scratch() / "t.txt").exists()
    for target in (outside / "x.txt", layout["home"] / ".bashrc", Path("/etc/acp-hermes-sandbox-test")):
        refused = run(sandbox, f"echo x > {target}", workspace)
        assert refused.returncode != 0 and "Read-only file system" in refused.stderr, target
        assert not target.exists()


@needs_sandbox
def test_children_stay_inside(sandbox: SessionSandbox, layout: dict[str, Path]) -> None:
    grandchild = f"python3 -c 'open(\"{layout['outside']}/deep\", \"w\")'"
    nested = run(sandbox, f"sh -c {shlex.quote(grandchild)}", layout["workspace"])
    assert nested.returncode != 0 and not (layout["outside"] / "deep").exists()


@needs_sandbox
def test_credentials_the_agents_home_and_its_api_key_are_hidden(sandbox: SessionSandbox,
                                                                layout: dict[str, Path]) -> None:
    home, hermes = layout["home"], layout["hermes"]
    looked = run(sandbox, f"cat {home}/.ssh/id_ed25519 {home}/.netrc {hermes}/config.yaml; "
                          f'ls -A {home}/.ssh {hermes}; echo "key=$ANTHROPIC_API_KEY"', layout["workspace"])
    assert "PRIVATE KEY" not in looked.stdout and "hunter2" not in looked.stdout
    assert "sk-ant-secret" not in looked.stdout + looked.stderr
    assert "key=\n" in looked.stdout


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback (what a sandbox without network must not reach)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    with answering(server, b""):
        yield server.getsockname()[1]


@needs_sandbox
def test_network_is_off_unless_allowed(sandbox: SessionSandbox, layout: dict[str, Path], listener: int) -> None:
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)\""
    assert run(sandbox, connect, layout["workspace"]).returncode != 0
    assert run(sandbox, connect, layout["workspace"], network=True).returncode == 0
    own_loopback = "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\""
    assert run(sandbox, own_loopback, layout["workspace"]).returncode == 0  # its own servers and tests work


@needs_sandbox
@pytest.mark.anyio
async def test_the_tool_context_runs_a_sandboxed_permit_confined(sandbox: SessionSandbox,
                                                                 layout: dict[str, Path]) -> None:
    ctx = make_context(layout["workspace"], gate=RecordingGate(sandboxed=True), sandbox=sandbox)
    command = f"echo x > {layout['outside']}/escaped.txt"
    await ctx.authorize_command(command, ctx.cwd)
    outcome = await ctx.run_command(CommandRequest(command, ctx.cwd, 30), _Quiet())
    assert outcome.sandboxed and outcome.exit_code != 0 and not (layout["outside"] / "escaped.txt").exists()


# What a command sees of bubblewrap (the sandbox's pid 1: its environment) and of its own open files.
LOOK_INSIDE = "tr '\\0' '\\n' < /proc/1/environ; echo fds: $(ls /proc/self/fd)"


@needs_sandbox
@pytest.mark.anyio
async def test_a_command_the_agent_spawns_starts_bubblewrap_with_the_allowlist_and_no_open_file(
    layout: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_agent_secret")  # the agent's own environment
    for name in ("LANG", "LC_ALL", "LC_CTYPE"):  # no locale: the launcher's Python would add LC_CTYPE to its own
        monkeypatch.delenv(name, raising=False)
    sandbox = SessionSandbox(
        enabled=True, writable=(layout["workspace"],), hidden=hidden_paths(layout["home"], layout["hermes"]),
        network_allowed=False, session_id="direct", environ={"PATH": "/usr/bin:/bin", "HOME": str(layout["home"])},
    )
    expected = {"PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME"}  # the allowlist, the private temp dir and cache
    editor = LocalEditor(shell="/bin/sh")
    foreground = await editor.run_command(
        CommandRequest(LOOK_INSIDE, layout["workspace"], 30, confinement=sandbox.confinement(network=False)), _Quiet())
    log = tmp_path / "job.log"
    job = editor.start_detached(LOOK_INSIDE, layout["workspace"], log, sandbox.confinement(network=False))
    assert job.wait(timeout=30) == 0
    for seen in (foreground.output, log.read_text()):  # a command and a background job (under the launcher)
        lines = seen.splitlines()
        assert {line.split("=", 1)[0] for line in lines[:-1]} == expected, seen
        assert lines[-1] == "fds: 0 1 2 3", seen  # ls's own directory is the 3: the filter's was closed
    sandbox.discard()


class _Quiet:
    async def on_terminal(self, terminal_id: str) -> None: ...

    async def on_output(self, output: str) -> None: ...


def test_a_session_with_the_sandbox_turned_off_says_so(layout: dict[str, Path]) -> None:
    off = SessionSandbox(enabled=False, writable=(layout["workspace"],), hidden=(), network_allowed=False,
                         session_id="s")
    assert not off.available and "sandbox: off" in off.status.detail
    assert off.describe()[0].startswith("no sandbox")
    with pytest.raises(RuntimeError, match="no sandbox"):
        off.confinement(network=False)


def test_a_local_editor_wraps_only_confined_commands(sandbox: SessionSandbox) -> None:
    editor = LocalEditor(shell="/bin/sh")
    assert editor.argv("ls", None) == ["/bin/sh", "-c", "ls"]
    if STATUS.available:
        wrapped = editor.argv("ls", sandbox.confinement(network=False))
        assert wrapped[-4:] == ["--", "/bin/sh", "-c", "ls"] and "--unshare-net" in wrapped


def test_the_seatbelt_profile_allows_writes_only_where_it_should(layout: dict[str, Path]) -> None:
    profile = SandboxProfile((layout["workspace"],), layout["outside"] / "tmp", (layout["home"] / ".ssh",))
    text = seatbelt_profile(profile)
    assert "(deny file-write*)" in text and f'(subpath "{layout["workspace"]}")' in text
    assert f'(deny file-read* (subpath "{layout["home"] / ".ssh"}"))' in text
    assert "(deny network*" in text and "(deny network*" not in seatbelt_profile(profile.with_network())


def test_the_private_temp_dir_goes_with_the_session(tmp_path: Path) -> None:
    sandbox = SessionSandbox(enabled=False, writable=(tmp_path,), hidden=(), network_allowed=False,
                             session_id="s-1")
    scratch = sandbox.scratch()
    (scratch / "cache").mkdir()
    (scratch / "cache" / "left.txt").write_text("x")
    sandbox.discard()
    assert not scratch.exists()
    again = sandbox.scratch()
    assert again != scratch and again.is_dir()
    sandbox.discard()
    sandbox.discard()  # twice: nothing left to remove
