"""The shipped editor configurations and the ACP Registry entry: they parse, run the command the
package installs, name option ids that exist, never pass a variable's name as the API key, and follow
the registry's rules (exact version pin, themeable 16×16 icon, accepted authMethods)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

import acp_hermes
from acp_hermes.adapter.options import config_options
from acp_hermes.adapter.server import HermesAgent
from acp_hermes.config import Paths, Settings
from acp_hermes.core.choices import SessionChoices
from acp_hermes.permissions.modes import Mode
from tests.support import REPO_ROOT

CONFIGS = REPO_ROOT / "editor-configs"
_PYPROJECT = (REPO_ROOT / "pyproject.toml").read_text()  # read by pattern: tomllib needs Python 3.11
PROJECT = {key: re.search(rf'^{key} = "([^"]+)"', _PYPROJECT, re.M).group(1)  # type: ignore[union-attr]
           for key in ("name", "version", "license")}
SCRIPT = re.search(r'^\[project\.scripts\]\n([\w-]+) = ', _PYPROJECT, re.M).group(1)  # type: ignore[union-attr]
COMMAND = "/.venv/bin/" + SCRIPT  # the console script the install creates


def option_values() -> dict[str, set[str]]:
    options = config_options(SessionChoices(Mode.DEFAULT, "claude-sonnet-5-5", "off"), Settings())
    return {option["id"]: {choice["value"] for choice in option["options"]} for option in options}


def test_zed_settings_are_strict_json_with_real_option_ids() -> None:
    server = json.loads((CONFIGS / "zed" / "settings.json").read_text())["agent_servers"]["acp-hermes"]
    assert server["type"] == "custom" and server["command"].endswith(COMMAND)
    assert server["default_mode"] in {mode.value for mode in Mode}
    known = option_values()
    for option, value in server["default_config_options"].items():
        assert value in known[option], (option, value)
    assert "`~/.config/zed/settings.json` on Linux **and macOS**" in (CONFIGS / "zed" / "README.md").read_text()


def test_jetbrains_acp_json_runs_the_installed_command() -> None:
    server = json.loads((CONFIGS / "jetbrains" / "acp.json").read_text())["agent_servers"]["acp-hermes"]
    assert server["command"].endswith(COMMAND) and server["args"] == []


CODE_FILES = ["neovim/codecompanion.lua", "neovim/avante.lua", "emacs/acp-hermes.el"]


@pytest.mark.parametrize("name", CODE_FILES)
def test_no_config_passes_a_variable_name_as_the_api_key(name: str) -> None:
    code = "\n".join(line for line in (CONFIGS / name).read_text().splitlines()
                     if not line.lstrip().startswith(("--", ";")))
    assert not re.search(r"ANTHROPIC_API_KEY\s*=\s*[\"']\$?\{?ANTHROPIC_API_KEY", code)
    assert COMMAND in code


def balanced(code: str, comment: str, pairs: str) -> bool:
    """Brackets balanced outside strings and comments: a structural check where no parser is installed."""
    stack: list[str] = []
    closing = {pairs[i + 1]: pairs[i] for i in range(0, len(pairs), 2)}
    in_string = False
    for line in code.splitlines():
        escaped = False
        for n, char in enumerate(line):
            if in_string:
                in_string = not (char == '"' and not escaped)
                escaped = char == "\\" and not escaped
            elif char == '"':
                in_string = True
            elif line.startswith(comment, n):
                break
            elif char in pairs[0::2]:
                stack.append(char)
            elif char in closing and (not stack or stack.pop() != closing[char]):
                return False
    return not stack and not in_string


@pytest.mark.parametrize("name", ["neovim/codecompanion.lua", "neovim/avante.lua"])
def test_lua_configs_parse(name: str) -> None:
    path = CONFIGS / name
    luac = shutil.which("luac") or shutil.which("luac5.4") or shutil.which("luac5.3")
    if luac:
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run([luac, "-p", "-o", str(Path(scratch) / "out"), str(path)], check=True)
    assert balanced(path.read_text(), "--", "(){}[]")


def test_emacs_config_parses() -> None:
    path = CONFIGS / "emacs" / "acp-hermes.el"
    emacs = shutil.which("emacs")
    if emacs:
        subprocess.run([emacs, "--batch", str(path), "--eval", "(check-parens)"], check=True, timeout=60)
    assert balanced(path.read_text(), ";", "()")


REGISTRY = CONFIGS / "acp-registry" / "acp-hermes"


def test_the_registry_entry_pins_this_exact_release() -> None:
    entry = json.loads((REGISTRY / "agent.json").read_text())
    assert entry["id"] == REGISTRY.name == PROJECT["name"]
    assert entry["version"] == PROJECT["version"] == acp_hermes.__version__
    assert entry["distribution"]["uvx"]["package"] == f"{PROJECT['name']}=={PROJECT['version']}"
    assert entry["license"] == PROJECT["license"] and entry["description"] and entry["name"]
    assert set(entry) <= {"id", "name", "version", "description", "repository", "authors", "license",
                          "icon", "distribution"}


def test_the_registry_icon_is_a_themeable_16px_svg() -> None:
    svg = ElementTree.parse(REGISTRY / "icon.svg").getroot()
    assert svg.tag.endswith("svg") and (svg.get("width"), svg.get("height"), svg.get("viewBox")) == (
        "16", "16", "0 0 16 16")
    colours = {element.get(attribute) for element in svg.iter() for attribute in ("fill", "stroke")}
    assert colours - {None} <= {"currentColor", "none"} and "currentColor" in colours


@pytest.mark.parametrize("terminal_auth", [False, True])
def test_initialize_offers_auth_methods_the_registry_accepts(tmp_path: Path, terminal_auth: bool) -> None:
    agent = HermesAgent(Paths(tmp_path), Settings())
    agent._terminal_auth = terminal_auth
    methods = agent.auth_methods()
    assert methods and all(method.get("type", "agent") in {"agent", "terminal"} for method in methods)
