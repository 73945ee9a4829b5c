"""`acp-hermes hooks list|test` and doctor's hook checks, as real subprocesses with real hook scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.test_cli import SCRIPT, cli_env


def run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=cli_env(home), cwd=str(cwd),
                          timeout=120, check=False)


def configure(home: Path, hooks: dict[str, object]) -> None:
    path = home / "acp-hermes" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("hooks: " + json.dumps(hooks) + "\n")


def guard(tmp_path: Path, answer: str) -> str:
    path = tmp_path / "guard.py"
    path.write_text(f"import json, sys\nevent = json.load(sys.stdin)\nprint({answer!r})\n")
    return f"{sys.executable} {path}"


def test_list_and_test_show_each_hook_and_its_answer_as_read(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                              "permissionDecisionReason": "not here"}})
    configure(home, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard(tmp_path, deny),
                                                                     "timeout": 5}]}]})
    (workspace / ".hermes").mkdir()
    (workspace / ".hermes" / "config.yaml").write_text(
        "hooks:\n  PostToolUse:\n    - matcher: Write\n      hooks: [{type: command, command: ./fmt.sh}]\n")

    listed = run(home, workspace, "hooks", "list")
    assert listed.returncode == 0, listed.stderr
    assert "PreToolUse [Bash]" in listed.stdout and "guard.py" in listed.stdout and "your config" in listed.stdout
    assert "PostToolUse [Write]: `./fmt.sh`" in listed.stdout and "not trusted" in listed.stdout

    tested = run(home, workspace, "hooks", "test", "PreToolUse", "--tool", "terminal", "--input", '{"command": "ls"}')
    assert tested.returncode == 0, tested.stderr
    assert "exit 0" in tested.stdout and "decision deny" in tested.stdout and "'not here'" in tested.stdout
    assert "Not run: 1 project hook(s)" in tested.stdout
    assert "No hook runs for PreToolUse on Read" in run(home, workspace, "hooks", "test", "pretooluse",
                                                        "--tool", "Read").stdout
    wrong = run(home, workspace, "hooks", "test", "Nope")
    assert wrong.returncode == 1 and "no hook event 'Nope'" in wrong.stderr


def test_doctor_flags_a_missing_command_and_an_answer_not_understood(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    strange = guard(tmp_path, json.dumps({"action": "approve"}))
    configure(home, {"PreToolUse": [{"matcher": "", "hooks": [{"command": "/nowhere/guard.sh"},
                                                               {"command": strange}]}]})
    tested = run(home, workspace, "hooks", "test", "PreToolUse", "--tool", "Bash")
    assert "NOT UNDERSTOOD" in tested.stdout and "unknown key 'action'" in tested.stdout
    # what a session could not understand is kept for doctor
    from acp_hermes.core.hook_config import record_not_understood

    record_not_understood(home / "acp-hermes", strange, "answered {\"action\": \"approve\"} (unknown key 'action')")
    doctor = run(home, workspace, "doctor")
    assert "`/nowhere/guard.sh` is not found" in doctor.stdout
    assert "unknown key 'action'" in doctor.stdout and "cannot understand" in doctor.stdout
