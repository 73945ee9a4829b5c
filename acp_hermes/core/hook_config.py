"""Which hooks a session has: the user's own (``hooks:`` in config.yaml) and, in a workspace the user
trusts, the project's (``hooks:`` in ``.hermes/config.yaml``), each of whose exact commands the user
approves once.

Hooks take Claude Code's shape (event → matcher groups → commands), so a user's scripts move over
unchanged; that is also why a matcher sees Claude Code's names for a tool beside ours (each tool
declares them: its ``claude_names`` trait). A project's hooks are commands someone else wrote that would
run with the user's rights, outside the sandbox: they load only in a trusted workspace (``core.trust``), and
each command runs only once the user approved that very command (``HookApprovals``, keyed by its hash: a
changed command asks again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from acp_hermes.config import HOOK_EVENTS, HookEvent, HooksConfig, Settings
from acp_hermes_memory.fs import atomic_write_text
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

PROJECT_CONFIG = Path(".hermes") / "config.yaml"
TOOL_EVENTS: frozenset[HookEvent] = frozenset({"PreToolUse", "PostToolUse"})

Source = Literal["user", "project"]


@value
class Hook:
    """One configured command for one event, with the matcher of its group and where it comes from."""

    event: HookEvent
    matcher: str
    command: str
    timeout: float
    source: Source

    @property
    def name(self) -> str:
        """How the user is told which hook did something: its command on one line, its end kept (where
        the script's name is) when it is long."""
        line = one_line(self.command, 10_000)
        return line if len(line) <= 80 else "…" + line[-79:]

    def matches(self, names: Sequence[str] | None) -> bool:
        """Whether the hook runs for a tool known by ``names`` (``tool_names``; None: an event without a
        tool, where every hook runs)."""
        return names is None or self.matcher in ("", "*") or matcher_matches(self.matcher, names)


def tool_names(name: str, claude_names: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a matcher sees for a tool: ours, then Claude Code's (MCP tools are already
    ``mcp__<server>__<tool>`` in both)."""
    return (name, *claude_names)


def matcher_matches(matcher: str, names: Sequence[str]) -> bool:
    """A matcher is a regular expression the whole name must match (``Write`` is not ``WriteFile``)."""
    pattern = _compiled(matcher)
    return any(pattern.fullmatch(name) for name in names)


@functools.cache
def _compiled(matcher: str) -> re.Pattern[str]:
    return re.compile(matcher)


def hooks_from(config: Mapping[HookEvent, Iterable[Any]], source: Source) -> list[Hook]:
    """The hooks of a validated ``hooks:`` section, in the order written."""
    return [Hook(event, group.matcher or "", command.command, command.timeout, source)
            for event, groups in config.items() for group in groups for command in group.hooks]


def user_hooks(settings: Settings) -> list[Hook]:
    return hooks_from(settings.hooks, "user")


@functools.cache
def _project_section() -> TypeAdapter[HooksConfig]:
    """The ``hooks:`` section's validator, built on first use (not on session/new's way)."""
    return TypeAdapter(HooksConfig)


def project_hooks(cwd: Path) -> tuple[list[Hook], str | None]:
    """The project's hooks (``.hermes/config.yaml``'s ``hooks:``) and what is wrong with the file, if
    anything: a file that cannot be read gives no hooks (blocking) and says why. Blocking: a thread's."""
    from acp_hermes.config import ConfigError, read_config_file

    path = cwd / PROJECT_CONFIG
    if not path.is_file():
        return [], None
    try:
        section = read_config_file(path).get("hooks") or {}
        return hooks_from(_project_section().validate_python(section), "project"), None
    except ConfigError as error:
        return [], str(error)
    except ValidationError as error:
        wrong = "; ".join(f"hooks.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:3])
        return [], f"{path}: {wrong}"


def session_hooks(settings: Settings, cwd: Path, trusted: bool) -> tuple[list[Hook], str | None]:
    """The user's hooks, then the project's where the workspace is trusted (``core.trust``; blocking:
    reads a file)."""
    hooks = user_hooks(settings)
    if not trusted:
        return hooks, None
    project, problem = project_hooks(cwd)
    return hooks + project, problem


def known_event(name: str) -> HookEvent | None:
    """``name`` as an event (any case), or None."""
    return next((event for event in HOOK_EVENTS if event.lower() == name.lower()), None)


class HookApprovals:
    """The project hook commands the user approved, by the hash of the exact command
    (``$HERMES_HOME/acp-hermes/hook_approvals.json``, 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def key(command: str) -> str:
        return hashlib.sha256(command.encode("utf-8")).hexdigest()

    def approved(self, command: str) -> bool:
        return self.key(command) in self._read()

    def approve(self, command: str) -> None:
        approved = self._read()
        approved[self.key(command)] = command
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"approved": approved}, indent=2) + "\n", mode=0o600,
                          private=True)

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:  # a damaged file approves nothing: each command asks again
            log.warning("hook approvals %s cannot be read (%s): project hooks ask again", self.path, error)
            return {}
        approved = data.get("approved") if isinstance(data, dict) else None
        return {k: v for k, v in approved.items() if isinstance(v, str)} if isinstance(approved, dict) else {}


NOT_UNDERSTOOD_FILE = Path("hooks") / "not_understood.json"


def record_not_understood(own: Path, command: str, said: str) -> None:
    """Keep what a hook answered that was not understood, for ``doctor`` (blocking; the latest per command)."""
    path = own / NOT_UNDERSTOOD_FILE
    recorded = not_understood_answers(own)
    recorded[command] = said
    try:
        atomic_write_text(path, json.dumps(recorded, indent=2) + "\n", mode=0o600, private=True)
    except OSError as error:
        log.warning("could not record a hook's answer for doctor: %s", error)


def not_understood_answers(own: Path) -> dict[str, str]:
    """Command → what it last answered that was not understood."""
    try:
        data = json.loads((own / NOT_UNDERSTOOD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}
