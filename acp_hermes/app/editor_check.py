"""The editor configurations on this machine that start acp-hermes, and whether they can.

Zed keeps its agents in ``settings.json`` (JSON with comments and trailing commas, which Zed
accepts); JetBrains IDEs in ``~/.jetbrains/acp.json``. Both map a name to a ``command`` with
``args``: an entry runs acp-hermes when the command or one of its arguments names it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_OUR_NAMES = ("acp-hermes", "acp_hermes")


@dataclass(frozen=True, slots=True)
class EditorEntry:
    """One agent entry that runs acp-hermes; ``problem`` says why it would not start."""

    name: str
    command: str
    problem: str | None


@dataclass(frozen=True, slots=True)
class EditorConfig:
    editor: str
    path: Path
    entries: list[EditorEntry]
    problem: str | None = None  # the file cannot be read or parsed


def config_files(home: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Where Zed and JetBrains keep their agent servers, in the order they are reported."""
    zed_dirs = [Path(environ["XDG_CONFIG_HOME"]) / "zed"] if environ.get("XDG_CONFIG_HOME") else []
    zed_dirs.append(home / ".config" / "zed")
    found = [("Zed", directory / "settings.json") for directory in dict.fromkeys(zed_dirs)]
    return [*found, ("JetBrains", home / ".jetbrains" / "acp.json")]


def check_editor_configs(home: Path | None = None, environ: Mapping[str, str] | None = None) -> list[EditorConfig]:
    """Every editor config file that exists, with its acp-hermes entries checked."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    return [_check(editor, path, environ) for editor, path in config_files(home, environ) if path.is_file()]


def _check(editor: str, path: Path, environ: Mapping[str, str]) -> EditorConfig:
    try:
        data = loads_lenient_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return EditorConfig(editor, path, [], f"cannot be read: {exc.strerror or exc}")
    except json.JSONDecodeError as exc:
        return EditorConfig(editor, path, [], f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
    servers = data.get("agent_servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return EditorConfig(editor, path, [])
    entries = [_entry(name, server, environ) for name, server in servers.items() if _runs_us(server)]
    return EditorConfig(editor, path, entries)


def _runs_us(server: Any) -> bool:
    if not isinstance(server, dict) or not isinstance(server.get("command"), str):
        return False
    args = server.get("args")
    words = [Path(server["command"]).name, *(str(arg) for arg in (args if isinstance(args, list) else []))]
    return any(name in word for word in words for name in _OUR_NAMES)


def _entry(name: str, server: dict[str, Any], environ: Mapping[str, str]) -> EditorEntry:
    command: str = server["command"]
    env = server.get("env")
    if os.sep in command or command.startswith("~"):
        path = Path(command).expanduser()
        if not path.is_file():
            return EditorEntry(name, command, f"the command {command} does not exist")
        if not os.access(path, os.X_OK):
            return EditorEntry(name, command, f"the command {command} is not executable")
        return EditorEntry(name, command, None)
    own_path = env.get("PATH") if isinstance(env, dict) else None
    search_path = own_path if isinstance(own_path, str) else environ.get("PATH")
    if shutil.which(command, path=search_path) is None:
        return EditorEntry(name, command, f"the command {command!r} is not on PATH (use its absolute path)")
    return EditorEntry(name, command, None)


def loads_lenient_json(text: str) -> Any:
    """JSON as Zed reads it: ``//`` and ``/* */`` comments and trailing commas allowed.

    Comments and trailing commas become spaces of the same length, so a parse error's line and
    column still point into the file as written.
    """
    out = list(text)
    index, length = 0, len(text)
    last_comma: int | None = None  # a comma with only whitespace or comments after it so far
    while index < length:
        char = text[index]
        if char == '"':
            last_comma = None
            index = _string_end(text, index)
            continue
        if text.startswith("//", index):
            end = text.find("\n", index)
            end = length if end == -1 else end
            _blank(out, index, end)
            index = end
            continue
        if text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = length if end == -1 else end + 2
            _blank(out, index, end)
            index = end
            continue
        if char in "}]" and last_comma is not None:
            out[last_comma] = " "
        if char == ",":
            last_comma = index
        elif not char.isspace():
            last_comma = None
        index += 1
    return json.loads("".join(out))


def _string_end(text: str, start: int) -> int:
    """The index just past the string literal that opens at ``start``."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == '"':
            return index + 1
        else:
            index += 1
    return index


def _blank(out: list[str], start: int, end: int) -> None:
    for position in range(start, end):
        if out[position] != "\n":
            out[position] = " "
