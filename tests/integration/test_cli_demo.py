"""`acp-hermes demo`: offline it leaves nothing behind (the user's HERMES_HOME untouched); with a
model it stores a titled session that loads; an endpoint it cannot use is named in one line with
status 1; with `--once` or piped input, Ctrl-C is a quiet exit with status 130 on a fresh line, the
session of a real run kept. After the first prompt it is a chat: piped lines one at a time until their
end; on a terminal, numbered questions, /steer and queued prompts while a turn runs, Ctrl-C cancelling
the turn, Ctrl-C twice at the prompt quitting with 130 and Ctrl-D with 0."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import termios
from pathlib import Path

import pytest

from acp_hermes.testing.demo_model import DEFAULT_PROMPT, respond, write_sample_project
from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_cli import SCRIPT, cli_env, run_cli
from tests.integration.test_cli_setup import closed_port_url
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, error_reply, text_reply, tool_reply
from tests.support.tool_checks import tool_result


def demo_env(home: Path, tmp: Path, **extra: str) -> dict[str, str]:
    """The demo's environment: ``home`` as HERMES_HOME, ``tmp`` as the temp folder, and ``extra``."""
    tmp.mkdir(exist_ok=True)
    return {**cli_env(home), "TMPDIR": str(tmp), **extra}


def run_demo(*args: str, env: dict[str, str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "demo", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, cwd=str(cwd), timeout=timeout)


def tree(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry under ``root``: (mode, size, mtime in ns, sha-256 of a file's bytes)."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return found


def listed_sessions(home: Path) -> list[dict[str, object]]:
    listing = run_cli("sessions", "list", "--json", home=home)
    assert listing.returncode == 0, listing.stderr
    return list(json.loads(listing.stdout))


def test_the_offline_demo_leaves_nothing_behind_and_the_users_hermes_home_untouched(tmp_path: Path) -> None:
    home = tmp_path / "real-hermes-home"
    with SessionDB(home / "acp-hermes" / "state.db") as db:  # the user's own history
        db.create_session("mine", cwd=str(tmp_path), model="m", mode="default", model_config={}, system_prompt="")
        db.append_message("mine", "user", "my own conversation")
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("The user's own memory", encoding="utf-8")
    (home / "acp-hermes" / "config.yaml").write_text("log_level: INFO\n", encoding="utf-8")  # no key: offline
    sessions_before = listed_sessions(home)
    before = tree(home)
    temp = tmp_path / "tmp"

    plain = run_demo(env=demo_env(home, temp), cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "OFFLINE" in plain.stdout and "all tests passed" in plain.stdout
    keyed = run_demo("--offline", "--yes", env=demo_env(home, temp, ANTHROPIC_API_KEY="sk-ant-real-0123456789abcdef"),
                     cwd=tmp_path)  # --offline with a key set: offline all the same
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr

    assert tree(home) == before  # not a file of the user's HERMES_HOME written, made or touched
    assert listed_sessions(home) == sessions_before == [sessions_before[0]]
    workspaces = re.findall(r"^workspace: (.+)$", plain.stdout + keyed.stdout, re.MULTILINE)
    assert len(workspaces) == 2 and not any(Path(w).exists() for w in workspaces)
    assert list(temp.iterdir()) == []  # the sample project, its HERMES_HOME and all the rest are gone


def test_an_invalid_configuration_ends_the_demo_in_one_line_with_status_1(tmp_path: Path) -> None:
    """Which model and key the demo should use are unknown: it says why and stops (README: "exit 1 with the
    reason when the model cannot be used"), rather than running the offline demo as if there were no key."""
    home = tmp_path / "hermes-home"
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("api_key: sk-ant-demo-0123456789abcdef\nmodle: claude-opus-5-5\n", encoding="utf-8")
    refused = run_demo(env=demo_env(home, tmp_path / "tmp"), cwd=tmp_path)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stdout == ""  # no offline demo, no session
    assert refused.stderr == (f"acp-hermes demo: configuration error: {config}: `modle`: unknown key (fix it, or run "
                              "`acp-hermes demo --offline`)\n")
    assert not (home / "acp-hermes" / "state.db").exists()

    offline = run_demo("--offline", "--yes", env=demo_env(home, tmp_path / "tmp"), cwd=tmp_path)
    assert offline.returncode == 0, offline.stdout + offline.stderr  # it does not use the configuration
    assert "all tests passed" in offline.stdout
    assert offline.stderr.startswith("acp-hermes demo: configuration error (the offline demo does not use it): ")


@pytest.mark.anyio
async def test_the_demo_with_a_model_stores_a_titled_session_that_loads(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home, project = tmp_path / "hermes-home", tmp_path / "project"
    project.mkdir()
    fake_anthropic.script(text_reply("A one-file project."), text_reply("Still one file."))
    fake_anthropic.script_auxiliary(text_reply("Overview of the project"))
    demo = run_demo("--cwd", str(project), env=demo_env(home, tmp_path / "tmp", **fake_anthropic.env()),
                    cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "OFFLINE" not in demo.stdout and "A one-file project." in demo.stdout

    [stored] = listed_sessions(home)  # in the user's SessionDB, named, in the real folder
    assert stored["title"] == "Overview of the project" and stored["cwd"] == str(project)

    async with running_agent(tmp_path, fake_anthropic, home=home, workspace=project) as agent:
        await agent.conn.load_session(cwd=str(project), session_id=str(stored["id"]), mcp_servers=[])
        assert "A one-file project." in agent.agent_text(str(stored["id"]))  # the replay
        assert await agent.prompt(str(stored["id"]), "and now?") == "end_turn"


def test_a_rejected_edit_in_the_demo_is_told_in_the_users_words(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home, project = tmp_path / "hermes-home", tmp_path / "project"
    project.mkdir()
    fake_anthropic.script(tool_reply("write_file", {"path": "a.txt", "content": "x\n"}, id="toolu_write"),
                          text_reply("Left it alone."))
    fake_anthropic.script_auxiliary(text_reply("A rejected write"))
    # No terminal to ask on and the user's own folder: the demo rejects the write.
    demo = run_demo("--cwd", str(project), "write a.txt", env=demo_env(home, tmp_path / "tmp", **fake_anthropic.env()),
                    cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "rejected (no terminal to ask on" in demo.stdout and not (project / "a.txt").exists()
    assert "Not done: you rejected it." in demo.stdout  # what the user reads ...
    assert "Do not retry" not in demo.stdout and "The user declined" not in demo.stdout
    told, failed = tool_result(fake_anthropic, "toolu_write")  # ... and what the model reads, apart
    assert failed and "The user declined this action" in told and "Do not retry" in told


def test_a_model_the_demo_cannot_use_is_named_in_one_line_with_status_1(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home, project = tmp_path / "hermes-home", tmp_path / "project"
    project.mkdir()
    nowhere = closed_port_url()
    closed = run_demo("--cwd", str(project), cwd=tmp_path, env=demo_env(
        home, tmp_path / "tmp", ANTHROPIC_API_KEY="sk-ant-demo-0123456789abcdef", ANTHROPIC_BASE_URL=nowhere))
    assert closed.returncode == 1, closed.stdout + closed.stderr
    assert closed.stderr.strip() == f"acp-hermes demo: Could not reach the model at {nowhere}: connection refused."

    wrong_key = run_demo("--cwd", str(project), cwd=tmp_path, env=demo_env(
        home, tmp_path / "tmp", **fake_anthropic.env(ANTHROPIC_API_KEY="sk-ant-wrong-0123456789abcdef")))
    assert wrong_key.returncode == 1, wrong_key.stdout + wrong_key.stderr
    assert wrong_key.stderr.strip() == (
        f"acp-hermes demo: {fake_anthropic.base_url} rejected the API key (401 Unauthorized).")
    for run in (closed, wrong_key):
        assert "turn ended" not in run.stdout and "WARNING" not in run.stderr
    assert not (home / "acp-hermes" / "state.db").exists()  # no session was started

    # The endpoint answers, the model does not (a model name it does not serve): the turn says so.
    fake_anthropic.script(error_reply(404, message="model: claude-nope", error_type="not_found_error"))
    failed = run_demo("--cwd", str(project), cwd=tmp_path, env=demo_env(
        home, tmp_path / "tmp", **fake_anthropic.env(HERMES_MODEL="claude-nope")))
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert ("acp-hermes demo: the model could not answer: The model API returned 404: model: claude-nope"
            in failed.stderr)


def test_ctrl_c_mid_turn_exits_quietly_and_keeps_the_session(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home, project = tmp_path / "hermes-home", tmp_path / "project"
    project.mkdir()
    write_sample_project(project)
    fake_anthropic.script(*[respond] * 10)  # the offline demo's story, from a model with a key
    fake_anthropic.script_auxiliary(respond)
    demo = subprocess.Popen([SCRIPT, "demo", "--yes", "--cwd", str(project), DEFAULT_PROMPT],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=demo_env(home, tmp_path / "tmp", **fake_anthropic.env()), cwd=str(tmp_path),
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

    listed = listed_sessions(home)
    assert len(listed) == 1 and listed[0]["cwd"] == str(project)
    shown = run_cli("sessions", "show", str(listed[0]["id"]), home=home).stdout
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


def take_the_terminal() -> None:
    """In the child: make its stdin, a pty, the controlling terminal of its new session, whose
    process group is then the terminal's foreground job (the one Ctrl-C interrupts)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_ctrl_c_at_a_permission_prompt_of_once_does_not_wait_for_enter_and_leaves_a_fresh_line(
    tmp_path: Path
) -> None:
    home = tmp_path / "hermes-home"
    terminal, demo_side = pty.openpty()  # a real terminal: the demo asks before it edits
    demo = subprocess.Popen([SCRIPT, "demo", "--once"], stdin=demo_side, stdout=demo_side, stderr=demo_side,
                            env=demo_env(home, tmp_path / "tmp"), cwd=str(tmp_path), start_new_session=True,
                            preexec_fn=take_the_terminal)
    os.close(demo_side)
    try:
        read_until(terminal, b"choose [1]: ")
        os.write(terminal, b"\x03")  # Ctrl-C typed: the terminal echoes ^C and interrupts the job
        assert demo.wait(timeout=30) == 130  # nobody pressed Enter
        shown = read_until(terminal, b"^C") + drain(terminal)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        os.close(terminal)
    assert b"Traceback" not in shown
    assert shown.endswith(b"^C\r\n")  # what the shell prints next starts on a line of its own
    assert not home.exists() and list((tmp_path / "tmp").iterdir()) == []  # offline: nothing of it stays


# The chat after the first prompt (README: `acp-hermes demo` goes on as a chat; `--once` stops after one).


def sections(output: str, lines: list[str]) -> list[str]:
    """What the demo printed for each of ``lines``, in order: from its ``you>`` echo to the next one's."""
    starts = []
    for line in lines:
        start = output.find(f"you> {line}\n", starts[-1] + 1 if starts else 0)
        assert start >= 0, f"{line!r} was not sent (in order):\n{output}"
        starts.append(start)
    return [output[start:end] for start, end in zip(starts, [*starts[1:], len(output)], strict=True)]


@pytest.mark.skipif(shutil.which("git") is None, reason="checkpoints (/rollback) need git")
def test_a_script_drives_the_offline_chat_line_by_line_and_its_end_quits(tmp_path: Path) -> None:
    home, temp = tmp_path / "hermes-home", tmp_path / "tmp"
    lines = ["/help", "run the tests", "/budget", "/queue next", "/rollback", "/rollback 1", "run the tests"]
    demo = subprocess.run([SCRIPT, "demo"], input="".join(line + "\n" for line in lines), capture_output=True,
                          text=True, env=demo_env(home, temp), cwd=str(tmp_path), timeout=180)
    output = demo.stdout
    assert demo.returncode == 0, output + demo.stderr
    story, *answers = sections(output, [DEFAULT_PROMPT, *lines])
    assert "all tests passed" in story and "turn ended: end_turn" in story  # the demo's task first
    helped, tested, budget, queued, listed, rolled_back, tested_again = answers
    assert "- `/rollback [" in helped and "- `/steer <text>`" in helped and "turn ended" not in helped
    assert "The tests pass: `test_calc.py` prints **all tests passed**." in tested
    assert "**Budget**" in budget and "`session_usd`: none" in budget
    assert "I'm the offline demo's scripted model, not a real LLM" in queued  # the queued prompt ran at once
    assert "1. " in listed and "changed since: `calc.py`" in listed
    assert "Restored 1 file to checkpoint 1: `calc.py`." in rolled_back
    assert "-    return sum(values) / len(values)" in rolled_back  # the fix taken back ...
    assert "The tests fail (AssertionError: 3.0)." in tested_again  # ... so the tests fail again
    assert tested_again.rstrip().endswith("turn ended: end_turn")  # the end of input ended the demo there
    assert not home.exists() and list(temp.iterdir()) == []  # offline: nothing of it stays


def test_once_runs_the_one_prompt_and_reads_no_input(tmp_path: Path) -> None:
    home, temp = tmp_path / "hermes-home", tmp_path / "tmp"
    demo = subprocess.run([SCRIPT, "demo", "--once"], input="/help\nrun the tests\n", capture_output=True,
                          text=True, env=demo_env(home, temp), cwd=str(tmp_path), timeout=180)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert f"you: {DEFAULT_PROMPT}" in demo.stdout and "all tests passed" in demo.stdout
    assert demo.stdout.rstrip().endswith("turn ended: end_turn")
    assert "you> " not in demo.stdout and "Commands:" not in demo.stdout  # not a line of the input was sent
    assert list(temp.iterdir()) == []


class Terminal:
    """The demo on a pseudo-terminal of its own, as a person runs it: what it shows, and keys typed."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.home, self.temp = tmp_path / "hermes-home", tmp_path / "tmp"
        self.fd, demo_side = pty.openpty()
        self.demo = subprocess.Popen([SCRIPT, "demo", *args], stdin=demo_side, stdout=demo_side, stderr=demo_side,
                                     env=demo_env(self.home, self.temp), cwd=str(tmp_path), start_new_session=True,
                                     preexec_fn=take_the_terminal)
        os.close(demo_side)
        self.shown = b""  # everything the terminal showed
        self._read = 0  # how far expect() has looked

    def expect(self, marker: str) -> str:
        """Wait (60 s at most) for ``marker`` after what was expected before; the text up to it."""
        wanted = marker.encode()
        while (found := self.shown.find(wanted, self._read)) < 0:
            ready, _, _ = select.select([self.fd], [], [], 60.0)
            if not ready:
                raise AssertionError(f"no {marker!r} on the terminal:\n{self.shown.decode(errors='replace')}")
            self.shown += os.read(self.fd, 4096)
        text = self.shown[self._read:found].decode(errors="replace")
        self._read = found + len(wanted)
        return text

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def exit_status(self) -> int:
        status = self.demo.wait(timeout=60)
        self.shown += drain(self.fd)
        return status

    def close(self) -> None:
        if self.demo.poll() is None:
            self.demo.kill()
            self.demo.wait()
        os.close(self.fd)


def test_on_a_terminal_the_chat_asks_steers_queues_cancels_with_ctrl_c_and_quits_with_ctrl_d(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    try:
        terminal.expect("? permission: Edit calc.py")
        terminal.expect("choose [1]: ")
        terminal.type("2\n")  # numbered: allow all edits this session
        terminal.expect("? permission: Run python3 test_calc.py")
        terminal.expect("choose [1]: ")
        terminal.type("\n")  # Enter alone: the first option, allow once
        terminal.expect("all tests passed")
        terminal.expect("turn ended: end_turn")
        terminal.expect("you> ")

        terminal.type("count slowly\n")
        terminal.expect(" 1… ")  # the turn is under way: what is typed now is sent at once
        terminal.type("/steer stop at five\n")
        terminal.expect("↪ Sent into the running turn")
        terminal.type("hello\n")
        terminal.expect("queued: it runs when this turn ends")
        terminal.expect("Done counting.")
        terminal.expect("↪ you: stop at five")  # read by the model once it had finished counting
        terminal.expect("You sent “stop at five” while I was working")
        terminal.expect("turn ended: end_turn")
        terminal.expect("scripted model, not a real LLM")  # then the queued prompt ran
        terminal.expect("turn ended: end_turn")
        terminal.expect("you> ")

        terminal.type("count\n")
        terminal.expect(" 1… ")
        terminal.type("\x03")  # Ctrl-C: session/cancel, back to the prompt
        cancelled = terminal.expect("turn ended: cancelled")
        terminal.expect("you> ")
        assert "cancelling the turn…" in cancelled and "Done counting" not in cancelled

        terminal.type("\x03")  # at the prompt: how to leave
        terminal.expect("(Ctrl-C again quits; so does Ctrl-D)")
        terminal.expect("you> ")
        terminal.type("\x04")  # Ctrl-D
        assert terminal.exit_status() == 0
    finally:
        terminal.close()
    shown = terminal.shown.decode(errors="replace")
    assert "Traceback" not in shown and shown.endswith("\n")
    assert not terminal.home.exists() and list(terminal.temp.iterdir()) == []  # the throwaway home is gone


def test_ctrl_c_at_a_question_of_the_chat_cancels_the_turn_and_twice_at_its_prompt_quits(tmp_path: Path) -> None:
    terminal = Terminal(tmp_path)
    try:
        terminal.expect("? permission: Edit calc.py")
        terminal.expect("choose [1]: ")
        terminal.type("\x03")  # the question is answered "cancelled", the turn cancelled
        cancelled = terminal.expect("turn ended: cancelled")
        terminal.expect("you> ")
        assert "cancelling the turn…" in cancelled and "✘ Edit calc.py" in cancelled
        terminal.type("\x03")
        terminal.expect("(Ctrl-C again quits; so does Ctrl-D)")
        terminal.expect("you> ")
        terminal.type("\x03")
        assert terminal.exit_status() == 130
    finally:
        terminal.close()
    assert terminal.shown.endswith(b"^C\r\n") and b"Traceback" not in terminal.shown
    assert list(terminal.temp.iterdir()) == []
