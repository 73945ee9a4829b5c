"""No tool is named outside its own module: the rest of the code decides by a tool's traits (its
guidance, toolsets, whether a child, the review or the flush may use it, the arguments that name
paths), so adding or renaming a tool touches its module, its test and its line in the docs.

Read from the source with ``ast``: every string constant in ``acp_hermes``, ``tools`` and ``memory``
that is exactly the name of a tool is a finding, unless it stands in the tool's own module, in a
docstring, among the toolsets a tool declares (``toolsets=(...)``: toolset names, some of which are
also tools' names), in a module where that word means something else (listed below, with what), or
in the offline demo's scripted model.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from acp_hermes.core import delegation, lineage, web
from acp_hermes.core.lineage import DELEGATE_TOOL_NAME
from acp_hermes_tools import core_tools
from tests.support import REPO_ROOT

PACKAGES = {"acp_hermes": "acp_hermes", "acp_hermes_tools": "tools", "acp_hermes_memory": "memory"}

# Where a word that is a tool's name means something else.
OTHER_MEANINGS: dict[str, set[str]] = {
    # ACP's terminal: the content type, the client capability, the display record of one
    "acp_hermes/adapter/handshake.py": {"terminal"},
    "acp_hermes/adapter/reception.py": {"terminal"},
    "acp_hermes/adapter/render.py": {"terminal"},
    "acp_hermes/adapter/server.py": {"terminal"},
    "acp_hermes/adapter/terminal_client.py": {"terminal"},
    "acp_hermes/core/transcript.py": {"terminal"},
    # MEMORY.md: the config key, the CLI's subcommand, the slash command, the store's target, the
    # permission subject of a write to the agent's stores
    "acp_hermes/config.py": {"memory"},
    "acp_hermes/app/cli.py": {"memory"},
    "acp_hermes/app/memory_cli.py": {"memory"},
    "acp_hermes/core/commands.py": {"memory"},
    "memory/store.py": {"memory"},
    "acp_hermes/permissions/gate.py": {"memory"},
    "acp_hermes/permissions/policy.py": {"memory"},
    # skill_manage's actions on a skill's files
    "memory/skills/records.py": {"patch", "write_file"},
    "memory/skills/store.py": {"patch", "write_file"},
    "tools/skills.py": {"patch", "write_file"},
    # the toolsets' own names
    "tools/toolsets.py": {"terminal", "todo", "session_search"},
}
# The offline demo's scripted model: it plays the model, which calls tools by their names.
PLAYS_THE_MODEL = {"acp_hermes/testing/demo_model.py"}


def _path(module: str) -> str:
    package, _, rest = module.partition(".")
    return f"{PACKAGES[package]}/{rest.replace('.', '/')}.py"


def own_modules() -> dict[str, set[str]]:
    """Each tool's name → the modules that declare it."""
    own = {tool.name: {_path(tool.handler.__module__)} for tool in core_tools()}
    own[DELEGATE_TOOL_NAME] = {_path(delegation.__name__), _path(lineage.__name__)}
    for name in ("web_search", "web_fetch"):  # the model API's own tools, offered by core.web
        own[name] = {_path(web.__name__)}
    return own


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _toolset_declarations(tree: ast.AST) -> set[int]:
    return {id(constant) for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "toolsets"
            for constant in ast.walk(node.value)}


def names_in(path: Path, names: set[str]) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _docstrings(tree) | _toolset_declarations(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in skipped:
            yield node.lineno, node.value


def test_no_tool_is_named_outside_its_own_module() -> None:
    own = own_modules()
    found = []
    for folder in PACKAGES.values():
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            where = path.relative_to(REPO_ROOT).as_posix()
            if where in PLAYS_THE_MODEL:
                continue
            for line, name in names_in(path, set(own)):
                if where not in own[name] and name not in OTHER_MEANINGS.get(where, set()):
                    found.append(f"{where}:{line} {name!r}")
    assert found == []


def test_the_check_knows_every_tool_and_finds_a_name() -> None:
    assert {"read_file", "terminal", "memory", "skill_manage", "clarify", "delegate_task"} <= set(own_modules())
    assert ("memory" in dict(names_in(REPO_ROOT / "memory/store.py", {"memory"})).values())
