"""``acp-hermes trust list|add|remove`` and doctor's trust lines, as real subprocesses (docs/trust.md).

Decisions are kept per repository (a linked worktree's is its main repository's) in a 0600 file of
$HERMES_HOME, shared with the server: a repository added here is trusted by a session without a question
(tests/integration/test_trust.py covers the server's side). The home folder is never trusted as a repository.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.integration.test_cli import SCRIPT, cli_env


def run(*args: str, home: Path, cwd: Path, user_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = cli_env(home)
    if user_home is not None:
        env["HOME"] = str(user_home)
    return subprocess.run([SCRIPT, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          cwd=str(cwd), timeout=120)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "AGENTS.md").write_text("rules\n", encoding="utf-8")
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "docs-server",
                                                                        "args": ["--port", "0"]}}}))
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "first", cwd=repo)
    return repo


def test_add_list_and_remove_keep_decisions_by_repository(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    repo = repository(tmp_path)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), cwd=repo)
    (repo / "sub").mkdir()

    empty = run("trust", "list", home=home, cwd=tmp_path)
    assert empty.returncode == 0 and "No decisions remembered" in empty.stdout

    added = run("trust", "add", str(linked), home=home, cwd=tmp_path)  # a linked worktree: its main repository
    assert added.returncode == 0, added.stderr
    assert f"Trusted {repo}:" in added.stdout
    assert "AGENTS.md" in added.stdout and "docs-server --port 0" in added.stdout  # what it carries, shown
    trust_file = home / "acp-hermes" / "trust.json"
    assert trust_file.stat().st_mode & 0o777 == 0o600
    listed = run("trust", "list", "--json", home=home, cwd=tmp_path)
    assert json.loads(listed.stdout) == [{"repository": str(repo), "trusted": True, "decided": json.loads(
        listed.stdout)[0]["decided"], "approved_mcp_servers": 1}]
    assert "trusted" in run("trust", "list", home=home, cwd=tmp_path).stdout

    doctor = run("doctor", home=home, cwd=repo / "sub")
    section = doctor.stdout.split("Workspace trust", 1)[1]
    assert f"`{repo}` is trusted (your decision, remembered)" in section
    assert "trust decisions" in doctor.stdout and str(trust_file) in doctor.stdout

    removed = run("trust", "remove", str(repo / "sub"), home=home, cwd=tmp_path)
    assert removed.returncode == 0 and f"Forgot the decision for {repo}" in removed.stdout
    again = run("trust", "remove", str(repo), home=home, cwd=tmp_path)
    assert again.returncode == 0 and "No decision was remembered" in again.stdout
    doctor = run("doctor", home=home, cwd=repo)
    section = doctor.stdout.split("Workspace trust", 1)[1]
    assert f"`{repo}` is not decided yet" in section and "`AGENTS.md`" in section


def test_the_home_folder_is_never_trusted_and_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    user_home = tmp_path / "me"
    user_home.mkdir()
    git("init", "-q", cwd=user_home)  # a dotfiles repository at home does not make home a repository
    refused = run("trust", "add", str(user_home), home=home, cwd=tmp_path, user_home=user_home)
    assert refused.returncode == 1 and "never trusted as a repository" in refused.stdout
    assert not (home / "acp-hermes" / "trust.json").exists()
    missing = run("trust", "add", str(tmp_path / "nowhere"), home=home, cwd=tmp_path)
    assert missing.returncode == 1 and "is not a folder" in missing.stdout and "Traceback" not in missing.stderr
