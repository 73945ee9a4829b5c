"""What a workspace carries (listed before it is trusted) and its own settings (read once it is)."""

from __future__ import annotations

import json
from pathlib import Path

from acp_hermes.core.project_files import HINT_DEPTH, find_gated, read_project


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_an_empty_workspace_carries_nothing(tmp_path: Path) -> None:
    write(tmp_path / "main.py", "print(1)\n")
    write(tmp_path / "docs" / "README.md", "docs\n")
    assert find_gated(tmp_path).empty


def test_everything_a_workspace_carries_is_listed(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "AGENTS.md", "rules")
    write(tmp_path / ".cursor" / "rules" / "style.mdc", "style")
    write(tmp_path / "pkg" / "CLAUDE.md", "hint")
    write(tmp_path / "a" / "b" / "c" / "AGENTS.md", "deep hint")
    write(tmp_path / "node_modules" / "x" / "AGENTS.md", "not ours")
    write(tmp_path / ".hidden" / "AGENTS.md", "not looked into")
    write(tmp_path / ".hermes" / "skills" / "ops" / "deploy" / "SKILL.md", "---\nname: deploy\n---\n")
    write(tmp_path / ".agents" / "skills" / "triage" / "SKILL.md", "---\nname: triage\n---\n")
    write(tmp_path / ".hermes" / "config.yaml", "model: m\nmcp_servers: {lint: {command: lint-server}}\n")
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"docs": {"command": "docs-server", "args": ["-v"]}}}))
    gated = find_gated(tmp_path)
    assert gated.context_files == ("AGENTS.md", ".cursor/rules/style.mdc")
    assert set(gated.hints) == {"pkg/CLAUDE.md", "a/b/c/AGENTS.md"} and HINT_DEPTH >= 3
    assert gated.skills == (".hermes/skills/ops/deploy", ".agents/skills/triage")
    assert gated.settings == (".hermes/config.yaml",)
    assert [(spec.name, spec.target) for spec in gated.mcp_servers] == [("docs", "docs-server -v"),
                                                                       ("lint", "lint-server")]
    assert ".mcp.json" in gated.files()
    lines = "\n".join(gated.lines())
    assert "`docs-server -v`" in lines and "`pkg/CLAUDE.md`" in lines


def test_a_projects_own_settings_as_read(tmp_path: Path) -> None:
    write(tmp_path / ".hermes" / "permissions.yaml", "allow_commands: [pytest, make check]\nreject_commands: [x]\n")
    write(tmp_path / ".hermes" / "config.yaml", "system_message: be brief\n")
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"api": {"type": "http", "url": "https://x.test/mcp"},
                                                             "bad": {"args": []}}}))
    project = read_project(tmp_path)
    assert project.allow_commands == {"pytest", "make check"}
    assert project.system_message == "be brief"
    assert [(spec.name, spec.transport, spec.source) for spec in project.mcp_servers] == [("api", "http", "project")]
    problems = "\n".join(project.problems)
    assert "`reject_commands` is not shared" in problems and "mcpServers.bad" in problems


def test_unreadable_project_files_are_problems_not_errors(tmp_path: Path) -> None:
    write(tmp_path / ".hermes" / "config.yaml", "model: [unclosed\n")
    write(tmp_path / ".mcp.json", "{nope")
    project = read_project(tmp_path)
    assert project.settings == {} and project.mcp_servers == ()
    assert any("not valid YAML" in line for line in project.problems)
    assert any("not valid JSON" in line for line in project.problems)
