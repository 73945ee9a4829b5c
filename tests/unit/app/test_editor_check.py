"""Editor configs on this machine: Zed's lenient JSON, and whether an acp-hermes entry can start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_hermes.app.editor_check import check_editor_configs, config_files, loads_lenient_json


def test_comments_and_trailing_commas_are_read_as_zed_reads_them() -> None:
    text = '// top\n{\n  "a": "x // y, ]", /* b */\n  "list": [1, 2,],\n  "nested": {"k": "v",},\n}\n'
    assert loads_lenient_json(text) == {"a": "x // y, ]", "list": [1, 2], "nested": {"k": "v"}}
    assert loads_lenient_json('{"escaped": "a\\" // b",}') == {"escaped": 'a" // b'}


def test_a_parse_error_points_into_the_file_as_written() -> None:
    with pytest.raises(json.JSONDecodeError) as error:
        loads_lenient_json('/* a\n comment */ {\n  "a": 1,\n  oops\n}')
    assert (error.value.lineno, error.value.colno) == (4, 3)


def _zed(home: Path, servers: dict[str, object]) -> None:
    path = home / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"agent_servers": servers}))


def test_entries_that_run_acp_hermes_are_checked(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "acp-hermes"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    not_executable = tmp_path / "acp-hermes-copy"
    not_executable.write_text("")
    _zed(tmp_path, {
        "installed": {"command": str(script)},
        "module": {"command": "python3", "args": ["-m", "acp_hermes"]},
        "on path": {"command": "acp-hermes", "env": {"PATH": str(tmp_path / "nowhere")}},
        "stale": {"command": str(not_executable)},
        "someone else": {"command": "/usr/bin/other-agent"},
        "registry": {"type": "registry"},
    })
    script.chmod(0o755)
    (config,) = check_editor_configs(tmp_path, {"PATH": "/usr/bin:/bin"})
    problems = {entry.name: entry.problem for entry in config.entries}
    assert set(problems) == {"installed", "module", "on path", "stale"}
    assert problems["installed"] is None and problems["module"] is None
    assert "not on PATH" in (problems["on path"] or "")  # the entry's own PATH is where the editor looks
    assert "not executable" in (problems["stale"] or "")


def test_zed_honours_xdg_config_home_and_jetbrains_has_its_own_file(tmp_path: Path) -> None:
    files = config_files(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert files == [("Zed", tmp_path / "xdg" / "zed" / "settings.json"),
                     ("Zed", tmp_path / ".config" / "zed" / "settings.json"),
                     ("JetBrains", tmp_path / ".jetbrains" / "acp.json")]
    assert check_editor_configs(tmp_path, {}) == []  # none of them exists: nothing to report
