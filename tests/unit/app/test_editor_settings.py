"""Editor settings that start acp-hermes wrong: a variable's name as the API key, a mode that does not
exist, avante.nvim left to approve every permission request itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.app.editor_check import avante_configs, check_editor_configs, without_lua_comments


@pytest.mark.parametrize("value", ["ANTHROPIC_API_KEY", "$ANTHROPIC_API_KEY", "${ANTHROPIC_API_KEY}",
                                   "%ANTHROPIC_API_KEY%", "$my_key", " YOUR_API_KEY "])
def test_a_variable_name_given_as_the_key_is_flagged(tmp_path: Path, value: str) -> None:
    zed = tmp_path / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    zed.write_text('{"agent_servers": {"h": {"command": "/bin/sh", "args": ["-m", "acp_hermes"], '
                   f'"env": {{"ANTHROPIC_API_KEY": "{value}"}}}}}}}}')
    (config,) = check_editor_configs(tmp_path, {})
    (warning,) = config.entries[0].warnings
    assert "a variable's name, not a key" in warning


@pytest.mark.parametrize("value", ["sk-ant-api03-xyz", "", "local-proxy-key"])
def test_a_key_or_nothing_is_not_flagged(tmp_path: Path, value: str) -> None:
    zed = tmp_path / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    zed.write_text('{"agent_servers": {"h": {"command": "/bin/sh", "args": ["acp-hermes"], '
                   f'"env": {{"ANTHROPIC_API_KEY": "{value}"}}, "default_mode": "bypass", '
                   '"default_config_options": {"mode": "accept-edits", "thought_level": "high"}}}}')
    (config,) = check_editor_configs(tmp_path, {})
    assert config.entries[0].warnings == ()


def test_lua_comments_go_and_strings_stay() -> None:
    source = ('a = "x -- y" -- gone\n--[[ block\n auto_approve_tool_permissions = false ]] b = [[ -- kept ]]\n'
              '--[==[ x ]==]c')
    assert without_lua_comments(source) == 'a = "x -- y" \n b = [[ -- kept ]]\nc'


@pytest.mark.parametrize(("setting", "flagged"), [
    ("", True), ("behaviour = { auto_approve_tool_permissions = true },", True),
    ("behaviour = { auto_approve_tool_permissions = false },", False),
    ("-- behaviour = { auto_approve_tool_permissions = false },", True),
])
def test_avante_is_flagged_unless_it_asks_for_permissions(tmp_path: Path, setting: str, flagged: bool) -> None:
    config = tmp_path / "xdg" / "nvim" / "init.lua"
    config.parent.mkdir(parents=True)
    config.write_text(f'require("avante").setup({{ {setting}\n acp_providers = {{ ["hermes"] = '
                      '{ command = "acp-hermes" } } })\n')
    (found,) = avante_configs(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PATH": "/nowhere"})
    (entry,) = found.entries
    assert entry.name == "hermes" and entry.command == "acp-hermes" and "not on PATH" in (entry.problem or "")
    assert bool(entry.warnings) is flagged


def test_a_neovim_config_without_acp_hermes_is_not_reported(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "nvim" / "init.lua"
    config.parent.mkdir(parents=True)
    config.write_text('require("avante").setup({ provider = "claude" })\n')
    assert avante_configs(tmp_path, {}) == []
