"""The shipped editor configurations and the ACP Registry entry: they parse, run the command the
package installs, name option ids that exist, never pass a variable's name as the API key, and follow
the registry's rules (its JSON schema, vendored in tests/fixtures/acp-registry/, and the checks its CI
runs beyond it: exact version pin, themeable 16×16 icon, accepted authMethods, the uvx launch shape).

Lua and Emacs Lisp are checked by their own tools where installed (``luac -p``; Emacs's
``check-parens``, byte-compiler and a load that builds the agent-shell configuration); a structural
check runs everywhere."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

import acp_hermes
from acp_hermes.adapter.options import config_options
from acp_hermes.adapter.server import AUTH_METHOD_KEY, HermesAgent
from acp_hermes.config import Paths, Settings
from acp_hermes.core.choices import SessionChoices
from acp_hermes.core.runtime import Runtime
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


def option_values_by_category() -> dict[str, set[str]]:
    """What CodeCompanion's ``session_config_options`` is keyed by: the option's category."""
    options = config_options(SessionChoices(Mode.DEFAULT, "claude-sonnet-5-5", "off"), Settings())
    return {option["category"]: {choice["value"] for choice in option["options"]} for option in options}


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


def test_vscode_acp_client_settings_run_the_installed_command() -> None:
    agents = json.loads((CONFIGS / "vscode" / "settings.json").read_text())["acp.agents"]
    server = agents["acp-hermes"]
    assert set(server) <= {"command", "args", "env", "displayName"}  # the extension's AgentConfigEntry
    assert server["command"].endswith(COMMAND) and server["args"] == [] and server["env"] == {}
    assert "formulahendry.acp-client" in (CONFIGS / "vscode" / "README.md").read_text()


def test_toad_command_line_runs_the_installed_command() -> None:
    lines = [line.strip() for line in (CONFIGS / "toad" / "README.md").read_text().splitlines()]
    command = shlex.split(next(line for line in lines if line.startswith("toad acp ")))
    assert command[:2] == ["toad", "acp"] and command[2].endswith(COMMAND)
    assert command[3].startswith("/") and command[4:] == ["-t", "acp-hermes"]


def lua_table(code: str, key: str) -> dict[str, str]:
    """The ``name = "value"`` pairs of the one-line table assigned to ``key``."""
    match = re.search(rf"^\s*{key} = \{{([^}}]*)\}}", code, re.M)
    assert match, f"no {key} table"
    return dict(re.findall(r'(\w+) = "([^"]*)"', match.group(1)))


def test_codecompanion_sets_real_session_config_options() -> None:
    code = (CONFIGS / "neovim" / "codecompanion.lua").read_text()
    chosen = lua_table(code, "session_config_options")
    known = option_values_by_category()
    assert chosen and all(value in known[category] for category, value in chosen.items()), chosen
    assert re.search(r'commands = \{ default = \{ "[^"]*' + re.escape(COMMAND) + '" } }', code)
    assert not re.search(r"^\s*env = ", code, re.M)  # inherits Neovim's environment


def test_avante_passes_only_set_variables_and_a_real_auth_method() -> None:
    code = (CONFIGS / "neovim" / "avante.lua").read_text()
    env = re.search(r"^\s*env = \{\n(.*?)^\s*\},", code, re.M | re.S)
    assert env, "no env table"
    entries = re.findall(r"^\s*(\w+) = (.*),$", env.group(1), re.M)
    assert {"HOME", "ANTHROPIC_API_KEY"} <= {name for name, _ in entries}
    assert all(value == f'os.getenv("{name}")' for name, value in entries), entries
    assert re.search(rf'^\s*auth_method = "{AUTH_METHOD_KEY}",$', code, re.M)
    assert re.search(rf'^\s*command = "[^"]*{re.escape(COMMAND)}",$', code, re.M)


def test_avante_shows_the_permission_requests_instead_of_approving_them_itself() -> None:
    """avante's default ``auto_approve_tool_permissions = true`` answers every request without asking."""
    code = (CONFIGS / "neovim" / "avante.lua").read_text()
    behaviour = re.search(r"^  behaviour = \{\n(.*?)^  \},", code, re.M | re.S)
    assert behaviour, "no top-level behaviour table"
    settings = [line.strip() for line in behaviour.group(1).splitlines() if not line.strip().startswith("--")]
    assert settings == ["auto_approve_tool_permissions = false,"]
    assert "--" in behaviour.group(1)  # with a comment saying why


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


LUA_FILES = ["neovim/codecompanion.lua", "neovim/avante.lua"]


@pytest.mark.parametrize("name", LUA_FILES)
def test_lua_configs_are_balanced(name: str) -> None:
    assert balanced((CONFIGS / name).read_text(), "--", "(){}[]")


@pytest.mark.parametrize("name", LUA_FILES)
def test_lua_configs_pass_luac(name: str) -> None:
    # Debian's lua5.4 package installs luac5.4 (and a `luac` alternative).
    luac = shutil.which("luac") or shutil.which("luac5.4") or shutil.which("luac5.3")
    if luac is None:
        pytest.skip("luac is not installed (.ci/run installs lua5.4 where it can)")
    result = subprocess.run([luac, "-p", str(CONFIGS / name)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


EMACS_CONFIG = CONFIGS / "emacs" / "acp-hermes.el"

# A stand-in for the two agent-shell functions the config calls, with agent-shell's keyword lists
# (agent-shell.el 0.79): an unknown keyword is an error, as it is with the real package.
AGENT_SHELL_STAND_IN = """;;; agent-shell.el --- test stand-in  -*- lexical-binding: t; -*-
(require 'cl-lib)
(defvar agent-shell-agent-configs nil)
(cl-defun agent-shell-make-agent-config
    (&rest config &key identifier mode-line-name welcome-function buffer-name shell-prompt
           shell-prompt-regexp client-maker needs-authentication authenticate-request-maker
           default-model-id default-session-mode-id session-meta mcp-servers notification-adapter
           icon-name install-instructions)
  (ignore identifier mode-line-name welcome-function buffer-name shell-prompt shell-prompt-regexp
          client-maker needs-authentication authenticate-request-maker default-model-id
          default-session-mode-id session-meta mcp-servers notification-adapter icon-name
          install-instructions)
  config)
(cl-defun agent-shell--make-acp-client
    (&rest client &key command command-params environment-variables context-buffer)
  (ignore command command-params environment-variables context-buffer)
  client)
(provide 'agent-shell)
"""

# Byte-compile with warnings as errors, load the compiled file, and print what agent-shell would get.
DESCRIBE_CONFIG = """(progn
  (require 'json)
  (setq byte-compile-error-on-warn t)
  (unless (byte-compile-file "acp-hermes.el") (kill-emacs 3))
  (load (expand-file-name "acp-hermes.elc") nil t)
  (let* ((config (car (last agent-shell-agent-configs)))
         (client (funcall (plist-get config :client-maker) nil)))
    (princ (json-encode
            (list (cons "identifier" (symbol-name (plist-get config :identifier)))
                  (cons "mode" (funcall (plist-get config :default-session-mode-id)))
                  (cons "command" (cons (plist-get client :command) (plist-get client :command-params)))
                  (cons "environment" (or (plist-get client :environment-variables) [])))))))"""


def test_emacs_config_parses() -> None:
    code = EMACS_CONFIG.read_text()
    assert balanced(code, ";", "()")
    assert code.startswith(";;; acp-hermes.el") and "lexical-binding: t" in code.splitlines()[0]
    assert "(provide 'acp-hermes)" in code and ":identifier 'acp-hermes" in code
    default_mode = re.search(r'^\(defvar acp-hermes-default-mode "([^"]+)"', code, re.M)
    assert default_mode and default_mode.group(1) in {mode.value for mode in Mode}


def _emacs() -> str:
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("emacs is not installed (.ci/run installs emacs-nox where it can)")
    return emacs


def test_emacs_config_passes_check_parens() -> None:
    result = subprocess.run([_emacs(), "--batch", "-Q", str(EMACS_CONFIG), "--eval", "(check-parens)"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_emacs_config_byte_compiles_and_builds_the_agent_shell_config(tmp_path: Path) -> None:
    emacs = _emacs()
    (tmp_path / "agent-shell.el").write_text(AGENT_SHELL_STAND_IN)
    shutil.copy(EMACS_CONFIG, tmp_path / "acp-hermes.el")
    result = subprocess.run([emacs, "--batch", "-Q", "-L", ".", "--eval", DESCRIBE_CONFIG], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert described["identifier"] == "acp-hermes" and described["mode"] in {mode.value for mode in Mode}
    assert described["command"][0].endswith(COMMAND) and described["command"][1:] == []
    assert described["environment"] == []  # the agent inherits Emacs's environment


REGISTRY = CONFIGS / "acp-registry" / "acp-hermes"


def test_the_registry_entry_pins_this_exact_release() -> None:
    entry = json.loads((REGISTRY / "agent.json").read_text())
    assert entry["id"] == REGISTRY.name == PROJECT["name"]
    assert re.fullmatch(r"[a-z][a-z0-9-]*", entry["id"]) and re.fullmatch(r"\d+\.\d+\.\d+", entry["version"])
    assert entry["version"] == PROJECT["version"] == acp_hermes.__version__
    assert entry["distribution"]["uvx"]["package"] == f"{PROJECT['name']}=={PROJECT['version']}"
    assert entry["license"] == PROJECT["license"] and entry["description"] and entry["name"]
    assert set(entry) <= {"id", "name", "version", "description", "repository", "authors", "license",
                          "icon", "distribution"}


# The registry's agent.schema.json as stored at two commits of agentclientprotocol/registry (which is the
# newer is not recorded): one adds `cmd` to package distributions, the other `license_url` and a binary's
# `sha256`. The entry passes both. Source and licence: tests/fixtures/acp-registry/README.md.
REGISTRY_SCHEMAS = tuple(REPO_ROOT / "tests" / "fixtures" / "acp-registry" / f"agent.schema.{commit}.json"
                         for commit in ("789271302b", "172d5034b0"))


@pytest.mark.parametrize("schema", REGISTRY_SCHEMAS, ids=lambda path: path.stem)
def test_the_registry_entry_passes_the_registry_schema(schema: Path) -> None:
    validator = Draft7Validator(json.loads(schema.read_text()), format_checker=Draft7Validator.FORMAT_CHECKER)
    entry = json.loads((REGISTRY / "agent.json").read_text())
    assert [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(entry)] == []


def test_the_registry_ci_reads_the_pin_and_the_package_as_meant() -> None:
    """What the registry's build_registry.py and update_versions.py do with the uvx entry beyond the
    schema, written out: no `@latest`, the version read from the pin by their pattern is the entry's,
    the PyPI name they look up (and bump) is ours, and the icon has no comment (it breaks their MDX)."""
    entry = json.loads((REGISTRY / "agent.json").read_text())
    package = entry["distribution"]["uvx"]["package"]
    assert "@latest" not in package.lower()
    pinned = re.search(r"[=@]+([\d.]+)", package)
    assert pinned is not None and pinned.group(1) == entry["version"]
    assert re.split(r"[<>=!@]", package)[0] == PROJECT["name"]
    assert re.sub(r"([=@]+)[\d.]+", r"\g<1>9.9.9", package) == f"{PROJECT['name']}==9.9.9"  # their bump
    assert "<!--" not in (REGISTRY / "icon.svg").read_text()


def test_a_registry_client_runs_the_acp_server_with_uvx() -> None:
    """A registry client (JetBrains AI Assistant and Air, Zed) runs `uvx <package> <args>`: uvx starts
    the console script named like the package, and that script with no arguments serves ACP on stdio
    (tests/integration/test_cli.py runs it bare). So the entry needs no `cmd` (`uvx --from <package>
    <cmd>`), which registry clients older than that field would not honour, and no arguments."""
    uvx = json.loads((REGISTRY / "agent.json").read_text())["distribution"]["uvx"]
    assert "cmd" not in uvx and uvx.get("args", []) == [] and not uvx.get("env")
    assert PROJECT["name"] == SCRIPT
    assert re.search(rf'^{SCRIPT} = "acp_hermes\.app\.cli:main"$', _PYPROJECT, re.M)


def test_the_registry_icon_is_a_themeable_16px_svg() -> None:
    svg = ElementTree.parse(REGISTRY / "icon.svg").getroot()
    assert svg.tag.endswith("svg") and (svg.get("width"), svg.get("height"), svg.get("viewBox")) == (
        "16", "16", "0 0 16 16")
    colours = {element.get(attribute) for element in svg.iter() for attribute in ("fill", "stroke")}
    assert colours - {None} <= {"currentColor", "none"} and "currentColor" in colours


# The clientCapabilities the ACP Registry's CI sends with its `initialize` (.github/workflows/client.py
# in agentclientprotocol/registry), and those of a client that announces terminal auth the ACP way.
REGISTRY_CHECK_CAPABILITIES = {"terminal": True, "fs": {"readTextFile": True, "writeTextFile": True},
                               "_meta": {"terminal_output": True, "terminal-auth": True}}
TERMINAL_AUTH_CAPABILITIES = {"auth": {"terminal": True}}


def registry_auth_type(method: dict[str, object]) -> object:
    """The type the registry's check reads: `type`, else the `_meta` kind, else agent."""
    meta = method.get("_meta")
    from_meta = None
    if isinstance(meta, dict):
        from_meta = "terminal" if "terminal-auth" in meta else "agent" if "agent-auth" in meta else None
    return method.get("type") or from_meta or "agent"


@pytest.mark.anyio
@pytest.mark.parametrize("capabilities", [REGISTRY_CHECK_CAPABILITIES, TERMINAL_AUTH_CAPABILITIES, {}])
async def test_initialize_offers_auth_methods_the_registry_accepts(tmp_path: Path,
                                                                   capabilities: dict[str, object]) -> None:
    agent = HermesAgent(Runtime(Settings(), Paths(tmp_path)))
    answer = await agent.initialize(protocol_version=1, client_capabilities=capabilities)
    methods = answer.model_dump(mode="json", by_alias=True)["authMethods"]  # as the SDK writes it
    assert methods and all(method.get("type", "agent") in {"agent", "terminal"} for method in methods)
    assert all(registry_auth_type(method) in {"agent", "terminal"} for method in methods)
    terminal = [method for method in methods if method.get("type") == "terminal"]
    assert bool(terminal) == (capabilities is TERMINAL_AUTH_CAPABILITIES)
    assert all(method["args"] == ["setup"] for method in terminal)  # `acp-hermes setup` in a terminal
