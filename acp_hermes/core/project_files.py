"""What a workspace carries that changes what the agent does, found and read without loading it.

Two jobs, both for ``core.trust``: ``find_gated`` lists what an untrusted workspace holds (instruction
files, subdirectory instructions, project skills, MCP servers with their command lines, settings, and
hooks once they exist) so the trust question can name exactly that; ``read_project`` reads a trusted
workspace's own settings: ``.hermes/config.yaml`` (a documented subset of the user's keys),
``.hermes/permissions.yaml`` (command grants the team shares) and ``.mcp.json`` (its MCP servers).

Nothing here runs a program, follows the repository's git configuration or sends a byte to the model.
Subdirectory instructions are looked for breadth first, ``HINT_DEPTH`` folders deep and in at most
``HINT_FOLDERS`` folders (hidden folders and build output skipped): a deeper one is gated all the same,
only not named in the question.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes_tools.mcp.specs import McpServerSpec

log = logging.getLogger(__name__)

CONFIG_FILE = Path(".hermes") / "config.yaml"
PERMISSIONS_FILE = Path(".hermes") / "permissions.yaml"
MCP_FILE = Path(".mcp.json")
SKILL_FOLDERS = (Path(".hermes") / "skills", Path(".agents") / "skills")
HINT_DEPTH = 3  # folders below the workspace searched for subdirectory instructions
HINT_FOLDERS = 2_000  # folders looked into at most, so a huge tree costs a bounded time
SKILL_DEPTH = 3  # <skills>/<category>/<name>/SKILL.md
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "venv", "target", "dist", "build", "vendor"})
MAX_FILE_BYTES = 1_000_000  # a project settings file bigger than this is not read


@value
class ProjectFiles:
    """A trusted workspace's own settings, as read (none of it applied yet)."""

    settings: Mapping[str, Any]  # .hermes/config.yaml: every key, allowed or not ({} when absent)
    mcp_servers: tuple[McpServerSpec, ...] = ()  # .mcp.json's, then .hermes/config.yaml's under other names
    allow_commands: frozenset[str] = frozenset()  # .hermes/permissions.yaml: grants for the sandbox only
    problems: tuple[str, ...] = ()  # what could not be read or used, one line each

    @property
    def system_message(self) -> str | None:
        message = self.settings.get("system_message")
        return message if isinstance(message, str) and message.strip() else None


@value
class Gated:
    """What an untrusted workspace carries that would change what the agent does (paths relative to it)."""

    context_files: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[McpServerSpec, ...] = ()
    settings: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()  # a project's hooks (issue 30): gated the same way once they exist

    @property
    def empty(self) -> bool:
        return not (self.context_files or self.hints or self.skills or self.mcp_servers or self.settings
                    or self.hooks)

    def files(self) -> list[str]:
        """Every file or folder found, for a client that lists paths (vibe's ``ignoredFiles``)."""
        servers = [str(MCP_FILE)] if any(spec.source == "project" for spec in self.mcp_servers) else []
        return sorted({*self.context_files, *self.hints, *self.skills, *servers, *self.settings, *self.hooks})

    def lines(self) -> list[str]:
        """One Markdown line per kind of thing found, for the user."""
        lines = []
        for label, items in (("instruction files", self.context_files), ("subdirectory instructions", self.hints),
                             ("skills", self.skills), ("settings", self.settings), ("hooks", self.hooks)):
            if items:
                lines.append(f"- {label}: " + ", ".join(f"`{item}`" for item in items))
        for spec in self.mcp_servers:
            lines.append(f"- MCP server `{spec.name}`, a program that would run: `{spec.target}`")
        return lines


def find_gated(workspace: Path, extra: Iterable[Path] = ()) -> Gated:
    """What ``workspace`` (and the additional directories' instruction files) carries (blocking)."""
    from acp_hermes.core.hints import HINT_FILENAMES
    from acp_hermes.core.system_prompt import context_file_candidates

    root = Path(os.path.realpath(workspace))
    context = tuple(_label(path, root) for path in context_file_candidates(root))
    hints = tuple(_label(path, root) for path in _hint_files(root, HINT_FILENAMES))
    hints += tuple(str(path) for folder in extra for path in _hint_files(Path(folder), HINT_FILENAMES, own=True))
    skills = tuple(_label(path, root) for folder in SKILL_FOLDERS for path in _skill_folders(root / folder))
    settings = tuple(str(name) for name in (CONFIG_FILE, PERMISSIONS_FILE) if _is_file(root / name))
    servers: tuple[McpServerSpec, ...] = ()
    if _is_file(root / MCP_FILE) or str(CONFIG_FILE) in settings:
        servers = read_project(root).mcp_servers
    return Gated(context, hints, skills, servers, settings)


def read_project(workspace: Path) -> ProjectFiles:
    """A trusted workspace's ``.hermes/config.yaml``, ``.hermes/permissions.yaml`` and ``.mcp.json``
    (blocking; each file that cannot be read or used is one problem, and is left out)."""
    from acp_hermes_tools.mcp.specs import parse_configured, parse_mcp_json

    problems: list[str] = []
    settings = _read_yaml(workspace / CONFIG_FILE, problems)
    grants = _read_yaml(workspace / PERMISSIONS_FILE, problems)
    allow = grants.get("allow_commands", [])
    if not isinstance(allow, list) or not all(isinstance(key, str) and key.strip() for key in allow):
        problems.append(f"{PERMISSIONS_FILE}: `allow_commands` must be a list of commands; ignored")
        allow = []
    problems += [f"{PERMISSIONS_FILE}: `{key}` is not shared from a project; ignored"
                 for key in grants if key != "allow_commands"]
    servers: list[McpServerSpec] = []
    if _is_file(workspace / MCP_FILE):
        document = _read_json(workspace / MCP_FILE, problems)
        if document is not None:
            found, trouble = parse_mcp_json(document)
            servers += found
            problems += trouble
    configured = settings.get("mcp_servers")
    if isinstance(configured, Mapping):
        found, trouble = parse_configured(configured, "project", f"{CONFIG_FILE} mcp_servers")
        taken = {spec.name for spec in servers}
        servers += [spec for spec in found if spec.name not in taken]
        problems += trouble
    elif configured is not None:
        problems.append(f"{CONFIG_FILE}: `mcp_servers` must be a mapping of names to servers; ignored")
    return ProjectFiles(settings, tuple(servers), frozenset(key.strip() for key in allow), tuple(problems))


def _read_text(path: Path, problems: list[str]) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(f"{path.name}: larger than {MAX_FILE_BYTES:,} bytes; not read")
            return None
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path.name}: cannot be read ({getattr(exc, 'strerror', None) or exc})")
        return None


def _read_yaml(path: Path, problems: list[str]) -> dict[str, Any]:
    text = _read_text(path, problems)
    if text is None:
        return {}
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problems.append(f"{_shown(path)}: not valid YAML ({getattr(exc, 'problem', exc)}); ignored")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(f"{_shown(path)}: the top level must be a mapping of keys to values; ignored")
        return {}
    return {str(key): item for key, item in data.items()}


def _read_json(path: Path, problems: list[str]) -> Any:
    text = _read_text(path, problems)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        problems.append(f"{MCP_FILE}: not valid JSON ({exc}); ignored")
        return None


def _shown(path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if path.parent.name == ".hermes" else path.name


def _hint_files(root: Path, names: Iterable[str], *, own: bool = False) -> list[Path]:
    """Subdirectory instruction files below ``root`` (its own too with ``own``: the workspace's are its
    context files, an additional directory's are hints), sorted. Level by level, unsorted within a level:
    a workspace with nothing to find is the common case, and its search should cost as little as it can."""
    wanted = frozenset(names)
    found: list[str] = []
    level, looked = [str(root)], 0
    for depth in range(HINT_DEPTH + 1):
        deeper: list[str] = []
        for folder in level:
            if looked >= HINT_FOLDERS:
                break
            looked += 1
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        name = entry.name
                        if name in wanted:
                            if (depth > 0 or own) and _entry_is_file(entry):
                                found.append(entry.path)
                        elif depth < HINT_DEPTH and _descend(entry):
                            deeper.append(entry.path)
            except OSError:
                continue
        level = deeper
    return [Path(path) for path in sorted(found)]


def _skill_folders(root: Path) -> list[Path]:
    """The folders under a project skills folder that hold a ``SKILL.md`` (sorted)."""
    found: list[Path] = []
    queue: deque[tuple[Path, int]] = deque([(root, 0)])
    while queue:
        folder, depth = queue.popleft()
        for entry in _entries(folder):
            if entry.name == "SKILL.md" and depth > 0 and _entry_is_file(entry):
                found.append(folder)
            elif depth < SKILL_DEPTH and _descend(entry):
                queue.append((Path(entry.path), depth + 1))
    return sorted(found)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError:
        return []


def _descend(entry: os.DirEntry[str]) -> bool:
    if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
        return False
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _entry_is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _label(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
