"""Ctrl-C during `acp-hermes demo`: a quiet exit with status 130, and the session kept."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
from pathlib import Path

from tests.integration.test_cli import SCRIPT, cli_env, run_cli


def test_ctrl_c_mid_turn_exits_quietly_and_keeps_the_session(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    demo = subprocess.Popen([SCRIPT, "demo", "--yes"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env(home), cwd=str(tmp_path),
                            start_new_session=True)  # its own process group, as a terminal's foreground job
    try:
        assert demo.stdout is not None
        seen = []
        for line in demo.stdout:  # until the turn is under way: the model has started answering
            seen.append(line)
            if line.startswith("… Read calc.py"):
                break
        else:
            raise AssertionError("the demo ended before its turn began:\n" + "".join(seen))
        os.killpg(demo.pid, signal.SIGINT)  # what Ctrl-C does: the demo and the server it started
        rest, errors = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
    output = "".join(seen) + rest + errors
    assert demo.returncode == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert "turn ended" not in output  # it really was interrupted mid-turn

    listed = json.loads(run_cli("sessions", "list", "--json", home=home).stdout)
    assert len(listed) == 1 and listed[0]["cwd"].endswith("/project")
    shown = run_cli("sessions", "show", listed[0]["id"], home=home).stdout
    assert "Find the bug in calc.py" in shown  # the prompt was stored before the interrupt


def read_until(fd: int, marker: bytes, limit: float = 60.0) -> bytes:
    """What a terminal shows until ``marker`` appears (select's timeout only bounds a hung demo)."""
    seen = b""
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], limit)
        if not ready:
            raise AssertionError(f"no {marker!r} on the terminal:\n{seen.decode(errors='replace')}")
        seen += os.read(fd, 4096)
    return seen


def drain(fd: int) -> bytes:
    """The rest of what the terminal got, once the program on it has exited."""
    rest = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: no process has the terminal open any more
            break
        if not chunk:
            break
        rest += chunk
    return rest


def test_ctrl_c_at_a_permission_prompt_does_not_wait_for_enter(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    terminal, demo_side = pty.openpty()  # a real terminal: the demo asks before it edits
    demo = subprocess.Popen([SCRIPT, "demo"], stdin=demo_side, stdout=demo_side, stderr=demo_side,
                            env=cli_env(home), cwd=str(tmp_path), start_new_session=True)
    os.close(demo_side)
    try:
        read_until(terminal, b"choose [1]: ")
        os.killpg(demo.pid, signal.SIGINT)
        assert demo.wait(timeout=30) == 130  # nobody pressed Enter
        assert b"Traceback" not in drain(terminal)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        os.close(terminal)
    assert len(json.loads(run_cli("sessions", "list", "--json", home=home).stdout)) == 1
