"""The gate's one door, and shell knowledge read once: every request goes through ``authorize``, each
text of a command line (the line, every payload in it) is parsed once per permission check, and the
shell package is kept as small modules that use only each other's public names."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from acp_hermes.permissions.gate import PermissionGate, PermissionQuestion
from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.shell import parse
from acp_hermes_memory.grants import GrantStore
from acp_hermes_tools.terminal import BackgroundJob
from tests.support import REPO_ROOT
from tests.support.tools import make_context

PERMISSIONS = REPO_ROOT / "acp_hermes" / "permissions"


class Allow:
    async def ask(self, question: PermissionQuestion) -> str:
        return "allow_once"


def test_the_gate_has_one_door() -> None:
    doors = sorted(name for name in dir(PermissionGate) if name.startswith("authorize"))
    assert doors == ["authorize"]


@pytest.mark.anyio
@pytest.mark.parametrize("line", [
    "git status && rg foo | head",
    "bash -c 'ls -la | sort' && sh -c \"cat README.md\"",
    "find . -name '*.py' -exec sh -c 'wc -l \"$1\"' _ {} \\; | sort -n",
    "echo 'rm -rf build' | sh",
    "uv run pytest -q",
])
async def test_each_text_of_a_command_is_parsed_once_per_permission_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """Risk, grant keys and the checkpoint's read-only verdict all read the one analysis the gate made."""
    parsed: Counter[str] = Counter()
    real = parse.parse_commands

    def counting(text: str) -> parse.Parse:
        parsed[text] += 1
        return real(text)

    monkeypatch.setattr(parse, "parse_commands", counting)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    gate = PermissionGate(asker=Allow(), mode=Mode.DEFAULT, home=tmp_path / "home", hermes_home=tmp_path / "hermes",
                          project=workspace, store=GrantStore(tmp_path / "permissions.yaml"))
    ctx = make_context(workspace, gate=gate)
    await ctx.authorize_command(line, workspace)  # the checkpoint layer also asks whether it writes files
    assert parsed[line] == 1 and set(parsed.values()) == {1}, parsed
    parsed.clear()
    job = BackgroundJob(4242, "sh", workspace, tmp_path / "log", 0.0, None,  # type: ignore[arg-type]
                        job_id="job-1", session_id=ctx.session_id)
    await ctx.authorize_job(job, "write", f"{line}\n")  # input for a job outside the sandbox: its own line
    assert len(parsed) >= 1 and set(parsed.values()) == {1}, parsed


def _modules() -> list[Path]:
    return sorted(PERMISSIONS.rglob("*.py"))


def test_no_module_of_the_shell_package_imports_another_ones_private_names() -> None:
    private = []
    for path in (PERMISSIONS / "shell").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("acp_hermes"):
                private += [f"{path.name}: {node.module}.{alias.name}" for alias in node.names
                            if alias.name.startswith("_")]
    assert private == []


def test_no_module_of_permissions_is_longer_than_800_lines() -> None:
    long = {path.relative_to(PERMISSIONS).as_posix(): lines for path in _modules()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}
