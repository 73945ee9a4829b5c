"""The editor configurations on this machine that start acp-hermes, and whether they can.

Zed keeps its agents in ``settings.json`` (JSON with comments and trailing commas, which Zed
accepts); JetBrains IDEs in ``~/.jetbrains/acp.json``. Both map a name to a ``command`` with
``args``: an entry runs acp-hermes when the command or one of its arguments names it. Besides
whether the command can start, an entry is checked for settings that start it wrong: an API key
that is a variable's name (the editor passes ``env`` values as written, it expands nothing) and a
default mode acp-hermes does not have.

avante.nvim is configured in Lua, in the Neovim config folder: a Lua file there that sets up
avante with acp-hermes is checked for ``behaviour.auto_approve_tool_permissions``, which avante
defaults to true: it then answers every permission request acp-hermes sends without asking.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
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
    warnings: tuple[str, ...] = ()  # settings that start it wrong (a variable's name as the key, an unknown mode)


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
    """Every editor config file that exists, with its acp-hermes entries checked; then the Neovim
    config files that set up avante.nvim with acp-hermes."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    found = [_check(editor, path, environ) for editor, path in config_files(home, environ) if path.is_file()]
    return found + avante_configs(home, environ)


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
    return EditorEntry(name, command, _command_problem(command, env, environ), _setting_warnings(server))


def _command_problem(command: str, env: Any, environ: Mapping[str, str]) -> str | None:
    if os.sep in command or command.startswith("~"):
        path = Path(command).expanduser()
        if not path.is_file():
            return f"the command {command} does not exist"
        if not os.access(path, os.X_OK):
            return f"the command {command} is not executable"
        return None
    own_path = env.get("PATH") if isinstance(env, dict) else None
    search_path = own_path if isinstance(own_path, str) else environ.get("PATH")
    if shutil.which(command, path=search_path) is None:
        return f"the command {command!r} is not on PATH (use its absolute path)"
    return None


# A variable's name written where its value belongs: ANTHROPIC_API_KEY, $ANTHROPIC_API_KEY,
# ${ANTHROPIC_API_KEY}, %ANTHROPIC_API_KEY%. No API key has this shape (keys have dashes).
_VARIABLE_NAME = re.compile(r"\$\{?[A-Za-z_]\w*\}?|\{?[A-Z][A-Z0-9_]*\}?|%[A-Za-z_]\w*%")


def _setting_warnings(server: dict[str, Any]) -> tuple[str, ...]:
    """What in an agent entry would start acp-hermes wrong, in words that say how to fix it."""
    from acp_hermes.config import ENV_API_KEY, THOUGHT_LEVELS
    from acp_hermes.permissions.modes import Mode

    warnings = []
    env = server.get("env")
    for key, value in (env.items() if isinstance(env, dict) else ()):
        if (key == ENV_API_KEY or key.endswith("_API_KEY")) and isinstance(value, str) \
                and _VARIABLE_NAME.fullmatch(value.strip()):
            warnings.append(
                f"env {key} is {value!r}, a variable's name, not a key: the editor passes it as written (it does "
                f"not expand variables), so acp-hermes has no key from it. Put the key itself there, or remove "
                f"{key} to use the key saved by `acp-hermes setup`"
            )
    modes = [mode.value for mode in Mode]
    options = server.get("default_config_options")
    chosen = [("default_mode", server.get("default_mode"))]
    if isinstance(options, dict):
        chosen.append(("default_config_options.mode", options.get("mode")))
    for where, mode in chosen:
        if mode is not None and mode not in modes:
            warnings.append(f"{where} is {mode!r}, which is not an acp-hermes mode: use one of {', '.join(modes)}")
    level = options.get("thought_level") if isinstance(options, dict) else None
    if level is not None and level not in THOUGHT_LEVELS:
        warnings.append(f"default_config_options.thought_level is {level!r}, which is not a thinking level: "
                        f"use one of {', '.join(THOUGHT_LEVELS)}")
    return tuple(warnings)


# --- avante.nvim ------------------------------------------------------------------------------

AVANTE = "Neovim (avante.nvim)"
_LUA_FILES_READ = 2_000  # a Neovim config is a few dozen files; a bigger tree is not one
_LUA_FILE_BYTES = 1_000_000
_AUTO_APPROVE = re.compile(r"\bauto_approve_tool_permissions\s*=\s*(\w+|\{)")
_LUA_COMMAND = re.compile(r"""\bcommand\s*=\s*(["'])(.*?)\1""")
_LUA_PROVIDER = re.compile(r"""\[\s*(["'])([^"'\n]*hermes[^"'\n]*)\1\s*\]\s*=\s*\{""")
AVANTE_AUTO_APPROVE = (
    "avante.nvim approves every permission request itself: behaviour.auto_approve_tool_permissions "
    "is {value}, so acp-hermes's questions never reach you. Add `behaviour = {{ auto_approve_tool_permissions "
    "= false }}` to require(\"avante\").setup({{...}})"
)


def avante_configs(home: Path, environ: Mapping[str, str]) -> list[EditorConfig]:
    """The Lua files of the Neovim config that set up avante.nvim with acp-hermes, each checked."""
    roots = [Path(environ["XDG_CONFIG_HOME"]) / "nvim"] if environ.get("XDG_CONFIG_HOME") else []
    roots.append(home / ".config" / "nvim")
    found: list[EditorConfig] = []
    for root in dict.fromkeys(roots):
        if not root.is_dir():
            continue
        sources = dict(_lua_sources(root))
        # The setting may sit in another file of the same config (a shared avante spec); the last one read wins.
        settings = [m.group(1) for text in sources.values() if "avante" in text for m in _AUTO_APPROVE.finditer(text)]
        approve = settings[-1] if settings else "not set (avante's default: true)"
        for path, text in sources.items():
            if "avante" in text and any(name in text for name in _OUR_NAMES):
                found.append(EditorConfig(AVANTE, path, [_avante_entry(text, approve, environ)]))
    return found


def _avante_entry(text: str, approve: str, environ: Mapping[str, str]) -> EditorEntry:
    provider = _LUA_PROVIDER.search(text)
    name = provider.group(2) if provider else "acp-hermes"
    commands = [m.group(2) for m in _LUA_COMMAND.finditer(text)]
    command = next((c for c in commands if any(n in c for n in _OUR_NAMES)), None)
    problem = _command_problem(command, None, environ) if command else None
    warnings = () if approve == "false" else (AVANTE_AUTO_APPROVE.format(value=approve),)
    return EditorEntry(name, command or "(a command set in Lua)", problem, warnings)


def _lua_sources(root: Path) -> Iterator[tuple[Path, str]]:
    """The config's Lua files (symlinked folders not followed), comments taken out."""
    read = 0
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".lua") or read >= _LUA_FILES_READ:
                continue
            path = Path(folder) / name
            try:
                if path.stat().st_size > _LUA_FILE_BYTES:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            read += 1
            yield path, without_lua_comments(text)


_LONG_BRACKET = re.compile(r"\[(=*)\[")


def without_lua_comments(text: str) -> str:
    """Lua source with its ``--`` and ``--[[ ]]`` comments taken out (strings kept as they are)."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char in "\"'":
            end = index + 1
            while end < length and text[end] != char and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            out.append(text[index:end + 1])
            index = end + 1
            continue
        long_open = _LONG_BRACKET.match(text, index)
        if long_open or text.startswith("--", index):
            comment = text.startswith("--", index)
            start = index + 2 if comment else index
            bracket = _LONG_BRACKET.match(text, start)
            if bracket:  # a long string, or a long comment
                close = "]" + bracket.group(1) + "]"
                end = text.find(close, bracket.end())
                end = length if end == -1 else end + len(close)
                if not comment:
                    out.append(text[index:end])
                index = end
                continue
            end = text.find("\n", index)  # a line comment
            index = length if end == -1 else end
            continue
        out.append(char)
        index += 1
    return "".join(out)


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
