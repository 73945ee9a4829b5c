"""The layout is the design: imports run one way, the SDKs stay in their rooms, tools have no side doors.

Read from the source with ``ast`` (every import counts: top level, inside functions, under
TYPE_CHECKING), so a lazy import cannot sneak past. The rules:

* ``memory`` imports nothing of ours; ``tools`` imports ``memory``; ``acp_hermes`` imports both. They
  are installed (and imported) as ``acp_hermes_memory`` and ``acp_hermes_tools``: nothing generic
  lands in site-packages.
* Inside ``acp_hermes`` the subpackages are layers: app → adapter → core → model → config →
  config_base → permissions (``testing`` sits beside permissions, for the app's demo). A module imports its own
  subpackage and lower layers only.
* The ACP SDK (``acp``) is imported by the adapter alone, the ``anthropic`` SDK by the model
  provider alone, the MCP SDK (``mcp``, ``mcp_types``) by ``tools.mcp`` alone.
* No import cycles between modules.
* Tools reach the world only through their context: no process spawning or signalling, deleting,
  renaming or writing of files in a tool module (``tools.local_io`` implements those doors).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

# Importable name → the folder it lives in (pyproject.toml's package-dir mapping).
PACKAGES = {"acp_hermes": "acp_hermes", "acp_hermes_tools": "tools", "acp_hermes_memory": "memory"}
TOOLS, MEMORY = "acp_hermes_tools", "acp_hermes_memory"
LAYERS = {  # acp_hermes subpackage (or top-level module) → rank; higher imports lower
    "__main__": 8,
    "app": 7,
    "adapter": 6,
    "core": 5,
    "model": 4,
    "config": 3,
    "config_base": 2,  # what of the configuration needs no pydantic: start-up reads it first
    "permissions": 1,
    "testing": 1,
    "__init__": 0,
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str  # a module of ours, or the top-level name of a third-party package
    line: int


def _module_name(package: str, path: Path) -> str:
    parts = [package, *path.relative_to(REPO_ROOT / PACKAGES[package]).with_suffix("").parts]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


MODULES: dict[str, Path] = {
    _module_name(package, path): path
    for package, folder in PACKAGES.items() for path in sorted((REPO_ROOT / folder).rglob("*.py"))
}


def _imports(module: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, _ours(alias.name) or alias.name.split(".")[0], node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                target = full if full in MODULES else (_ours(node.module) or node.module.split(".")[0])
                yield Import(module, target, node.lineno)


def _ours(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


@functools.cache
def all_imports() -> tuple[Import, ...]:
    """Every import of every module, read once when a test first asks (not at collection: each worker
    of a parallel run collects every file)."""
    return tuple(found for module in MODULES for found in _imports(module))


def _layer(module: str) -> tuple[str, int]:
    """(subpackage, rank) of an acp_hermes module."""
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    return key, LAYERS[key]


def _violation(found: Import) -> str | None:
    importer, imported = found.importer, found.imported
    top, target_top = importer.split(".")[0], imported.split(".")[0]
    if imported == "acp" and not importer.startswith("acp_hermes.adapter"):
        return "only the ACP adapter imports the acp SDK"
    if imported == "anthropic" and importer != "acp_hermes.model.provider":
        return "only the model provider imports the anthropic SDK"
    if imported.split(".")[0] in ("mcp", "mcp_types") and not importer.startswith(f"{TOOLS}.mcp."):
        return "only tools.mcp imports the MCP SDK"
    if target_top not in PACKAGES:
        return None
    if top == MEMORY and target_top != MEMORY:
        return "memory imports nothing of ours"
    if top == TOOLS and target_top == "acp_hermes":
        return "tools imports memory and itself only"
    if top == "acp_hermes" and target_top == "acp_hermes":
        (own, rank), (other, other_rank) = _layer(importer), _layer(imported)
        if own != other and other_rank >= rank:
            return f"acp_hermes.{own} (layer {rank}) may not import acp_hermes.{other} (layer {other_rank})"
    return None


def test_the_rules_see_every_package_and_subpackage() -> None:
    subpackages = {name.split(".")[1] for name in MODULES if name.startswith("acp_hermes.")}
    assert subpackages <= set(LAYERS), f"give {subpackages - set(LAYERS)} a layer in LAYERS"
    expected = {"acp_hermes.adapter.server", "acp_hermes.core.loop", f"{TOOLS}.registry", f"{MEMORY}.session_db"}
    assert expected <= set(MODULES)
    assert any(i.imported == "acp" for i in all_imports()) and any(i.imported == "anthropic" for i in all_imports())


def test_imports_run_one_way() -> None:
    problems = [
        f"{found.importer}:{found.line} imports {found.imported}: {reason}"
        for found in all_imports()
        if (reason := _violation(found)) is not None
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("acp_hermes_memory.store", "acp_hermes_tools.registry", False),
        ("acp_hermes_tools.files", "acp_hermes.core.events", False),
        ("acp_hermes.core.loop", "acp_hermes.adapter.render", False),
        ("acp_hermes.model.provider", "acp_hermes.core.session", False),
        ("acp_hermes.core.session", "acp", False),
        ("acp_hermes.core.session", "anthropic", False),
        ("acp_hermes.adapter.server", "acp_hermes.core.session", True),
        ("acp_hermes.core.session", "acp_hermes.permissions.gate", True),
        ("acp_hermes_tools.memory", "acp_hermes_memory.store", True),
        ("acp_hermes.core.session", "mcp", False),
        ("acp_hermes_tools.registry", "mcp_types", False),
        ("acp_hermes_tools.mcp.connection", "mcp", True),
    ],
)
def test_the_rules_themselves(importer: str, imported: str, allowed: bool) -> None:
    assert (_violation(Import(importer, imported, 1)) is None) is allowed


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    edges: dict[str, set[str]] = {module: set() for module in MODULES}
    for found in all_imports():
        if found.imported in MODULES and found.imported != found.importer:
            edges[found.importer].add(found.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycles() -> None:
    assert _cycles() == []


# --- tools have no side doors -------------------------------------------------------------------

_SIDE_EFFECT_CALLS = {  # dotted call → what it does
    "subprocess.Popen": "spawns a process", "subprocess.run": "spawns a process",
    "subprocess.call": "spawns a process", "subprocess.check_call": "spawns a process",
    "subprocess.check_output": "spawns a process", "os.system": "spawns a process", "os.popen": "spawns a process",
    "anyio.open_process": "spawns a process", "anyio.run_process": "spawns a process",
    "asyncio.create_subprocess_exec": "spawns a process", "asyncio.create_subprocess_shell": "spawns a process",
    "os.remove": "deletes", "os.unlink": "deletes", "os.rmdir": "deletes", "shutil.rmtree": "deletes",
    "os.rename": "moves", "os.replace": "moves", "shutil.move": "moves", "shutil.copy": "writes",
    "atomic_write_text": "writes", "os.write": "writes",
    "os.kill": "signals a process", "os.killpg": "signals a process group",
}
_SIDE_EFFECT_METHODS = {"unlink", "rmdir", "rename", "write_text", "write_bytes", "touch", "apply"}
# local_io is where the doors are implemented; search runs ripgrep and git queries, which read only;
# the sandbox runs bubblewrap once to see that it works; the terminal removes its own log directory.
_ALLOWED = {
    "acp_hermes_tools.local_io": {*_SIDE_EFFECT_CALLS, *_SIDE_EFFECT_METHODS, "open"},
    "acp_hermes_tools.search": {"anyio.open_process", "anyio.run_process"},
    "acp_hermes_tools.sandbox": {"subprocess.run"},  # bubblewrap probe
    "acp_hermes_tools.protected_paths": {"shutil.move"},  # what a sandboxed command planted, out of the workspace
    # the temp directories of this process (and of dead ones: os.kill(pid, 0) asks whether one lives)
    "acp_hermes_tools.temp_dirs": {"shutil.rmtree", "os.kill"},
    "acp_hermes_tools.launcher": {"os.killpg", "os.kill"},  # a script of its own process: ends its own group, or itself
    "acp_hermes_tools.process_trees": {"os.killpg", "os.kill"},  # stopping a group and what it started outside it
    # checkpoints: the store runs its own git and keeps its own files; a restore (which the user asked
    # for) writes and deletes workspace files, by directory descriptor and never through a symlink
    "acp_hermes_tools.checkpoints.git": {"subprocess.run", "subprocess.Popen"},
    "acp_hermes_tools.checkpoints.journal": {"atomic_write_text"},
    "acp_hermes_tools.checkpoints.store": {"atomic_write_text"},
    "acp_hermes_tools.checkpoints.workspace": {"os.unlink", "os.replace", "os.rmdir", "unlink", "rmdir"},
}


def _side_doors(module: str, source: str) -> Iterator[str]:
    tree = ast.parse(source)
    allowed = _ALLOWED.get(module, set())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = ast.unparse(node.func)
        if dotted in _SIDE_EFFECT_CALLS and dotted not in allowed:
            yield f"{module}:{node.lineno} {dotted} ({_SIDE_EFFECT_CALLS[dotted]})"
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _SIDE_EFFECT_METHODS:
            if node.func.attr not in allowed and not dotted.startswith(("ctx.", "self.")):
                yield f"{module}:{node.lineno} {dotted}() outside the tool context"
        elif dotted == "open" and "open" not in allowed and _writes(node):
            yield f"{module}:{node.lineno} open() for writing"


def _writes(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return mode is not None and any(flag in ast.unparse(mode) for flag in "wax+")


def test_tools_reach_the_world_only_through_their_context() -> None:
    doors = [
        door
        for module, path in MODULES.items()
        if module.startswith(f"{TOOLS}.")
        for door in _side_doors(module, path.read_text(encoding="utf-8"))
    ]
    assert doors == []


def test_the_side_door_check_finds_side_doors() -> None:
    source = (
        "import subprocess\nsubprocess.Popen(['x'])\npath.unlink()\nstore.apply('add')\n"
        "open(p, 'w')\nopen(p, mode='a')\nopen(p)\nctx.write_text(p, 'x')\n"
    )
    doors = list(_side_doors(f"{TOOLS}.probe", source))
    assert [door.split(" ", 1)[0] for door in doors] == [f"{TOOLS}.probe:{line}" for line in (2, 3, 4, 5, 6)], doors
