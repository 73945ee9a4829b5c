"""Permission modes, remembered grants and the gate every mutation passes.

The gate decides per call: refuse (plan mode, catastrophic commands, remembered rejections),
allow without asking (the mode or a remembered grant covers it), or ask the user through the
editor with the exact diff or command in front of them. "Always" answers are remembered
narrowly: edits inside this session's workspace for the rest of the session; a command's
program and subcommand (``git status``, ``pytest``) for the session and, persisted in
``permissions.yaml``, for the project.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from acp_hermes.atomic import atomic_write_text
from acp_hermes.events import DiffDisplay, Display, TextDisplay, ToolKind
from tools.registry import FileChange, PermissionDenied, ToolContext

log = logging.getLogger(__name__)


class Mode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"
    BYPASS = "bypass"


MODE_DESCRIPTIONS: dict[Mode, tuple[str, str]] = {
    Mode.DEFAULT: ("Default", "Ask before every edit and command."),
    Mode.ACCEPT_EDITS: ("Accept edits", "Edit files in the workspace without asking; ask before commands."),
    Mode.PLAN: ("Plan", "Read-only: explore and plan; edits and commands are refused."),
    Mode.BYPASS: ("Bypass", "No prompts, except for sensitive paths, outside writes and dangerous commands."),
}

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
REJECT_ALWAYS = "reject_always"
CANCELLED = "cancelled"

DECLINED = "The user declined this action, so it did not run. Do not retry it; ask the user how to proceed."
PLAN_REFUSAL = (
    "Refused: the session is in plan mode, which is read-only. Do not try to edit files or run commands; "
    "explore with the read-only tools and present a plan. The user will switch modes to carry it out."
)


def option(option_id: str, name: str) -> dict[str, str]:
    return {"optionId": option_id, "name": name, "kind": option_id}


class Asker(Protocol):
    """Puts a permission question to the user (``session/request_permission``)."""

    async def ask(
        self,
        ctx: ToolContext,
        *,
        title: str,
        kind: ToolKind,
        display: Sequence[Display],
        options: list[dict[str, str]],
    ) -> str:
        """The chosen optionId, or ``"cancelled"``."""
        ...


class ProjectGrants:
    """Command grants remembered per project in ``permissions.yaml``."""

    def __init__(self, path: Path, project: Path) -> None:
        self._path = path
        self._project = str(project)
        data = self._read()
        entry = data.get("projects", {}).get(self._project, {})
        self.allow: set[str] = set(entry.get("allow_commands", []))
        self.reject: set[str] = set(entry.get("reject_commands", []))

    def _read(self) -> dict[str, Any]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        import yaml

        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            log.warning("%s is not valid YAML; ignoring remembered command grants", self._path)
            return {}
        return data if isinstance(data, dict) else {}

    def remember(self, key: str, *, allow: bool) -> None:
        import yaml

        (self.allow if allow else self.reject).add(key)
        (self.reject if allow else self.allow).discard(key)
        data = self._read()
        projects = data.setdefault("projects", {})
        projects[self._project] = {
            "allow_commands": sorted(self.allow),
            "reject_commands": sorted(self.reject),
        }
        atomic_write_text(self._path, yaml.safe_dump(data, sort_keys=True))


@dataclass
class SessionGrants:
    """What the user chose "always" for, for the rest of this session."""

    edits: bool | None = None  # True allowed, False rejected, None ask
    state: bool | None = None
    allow_commands: set[str] = field(default_factory=set)
    reject_commands: set[str] = field(default_factory=set)


@dataclass
class PermissionGate:
    """One per session; implements ``tools.registry.Gate``."""

    asker: Asker
    mode: Mode
    home: Path
    hermes_home: Path
    project: ProjectGrants
    session: SessionGrants = field(default_factory=SessionGrants)

    async def authorize_edits(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        if self.mode is Mode.PLAN:
            raise PermissionDenied(PLAN_REFUSAL)
        from acp_hermes.risk import sensitive_path_reason  # big rule tables: loaded after start-up

        display = [DiffDisplay(str(c.path), c.old_text, c.new_text or "") for c in changes]
        title = ctx.title or _edit_title(changes, ctx.cwd)
        concerns = []
        for change in changes:
            if not ctx.in_workspace(change.path):
                concerns.append(f"{change.path} is outside the workspace")
            reason = sensitive_path_reason(change.path, self.home, hermes_home=self.hermes_home)
            if reason:
                concerns.append(f"{change.path}: {reason}")
        if concerns:
            log.info("permission: edit needs approval (%s)", "; ".join(concerns))
            _require_allowed(await self._ask(ctx, f"{title} ({concerns[0]})", "edit", display, always=False))
        elif self.session.edits is False:
            raise PermissionDenied("The user chose to reject all edits in this session. " + DECLINED)
        elif self.mode in (Mode.ACCEPT_EDITS, Mode.BYPASS) or self.session.edits:
            reason = "session grant" if self.session.edits else f"{self.mode.value} mode"
            log.info("permission: edit allowed by %s", reason)
        else:
            choice = await self._ask(
                ctx, title, "edit", display, always=True,
                always_name="Allow all edits in this workspace for this session",
                reject_always_name="Reject all edits for this session",
            )
            if choice in (ALLOW_ALWAYS, REJECT_ALWAYS):
                self.session.edits = choice == ALLOW_ALWAYS
            _require_allowed(choice)
        await ctx.show(display)

    async def authorize_command(self, ctx: ToolContext, command: str, cwd: Path) -> None:
        from acp_hermes.risk import assess_command, command_keys

        risk = assess_command(command, home=self.home, roots=ctx.roots)
        if risk.level == "catastrophic":
            raise PermissionDenied(
                f"Refused: this command is never allowed ({', '.join(risk.reasons)}). Do not try to run it "
                "in another form."
            )
        if self.mode is Mode.PLAN:
            raise PermissionDenied(PLAN_REFUSAL)
        keys = command_keys(command)
        display = [TextDisplay(f"$ {command}" + (f"\n# in {cwd}" if cwd != ctx.cwd else ""), fence="sh")]
        title = ctx.title or (f"Run {command}" if len(command) <= 80 else f"Run {command[:79]}…")
        rejected = [k for k in keys or () if k in self.session.reject_commands or k in self.project.reject]
        if rejected:
            raise PermissionDenied(f"The user chose to always reject `{rejected[0]}`. " + DECLINED)
        if risk.level == "dangerous":
            log.info("permission: dangerous command needs approval (%s)", ", ".join(risk.reasons))
            warning = f"{title} — {', '.join(risk.reasons)}"
            _require_allowed(await self._ask(ctx, warning, "execute", display, always=False))
        elif self.mode is Mode.BYPASS:
            log.info("permission: command allowed by bypass mode")
        elif keys and all(k in self.session.allow_commands or k in self.project.allow for k in keys):
            log.info("permission: command allowed by remembered grant(s) %s", ", ".join(keys))
        else:
            label = ", ".join(f"`{k}`" for k in keys) if keys else None
            choice = await self._ask(
                ctx, title, "execute", display, always=label is not None,
                always_name=f"Always allow {label} in this project",
                reject_always_name=f"Always reject {label} in this project",
            )
            if choice in (ALLOW_ALWAYS, REJECT_ALWAYS) and keys:
                allow = choice == ALLOW_ALWAYS
                remembered = self.session.allow_commands if allow else self.session.reject_commands
                for key in keys:
                    remembered.add(key)
                    self.project.remember(key, allow=allow)
            _require_allowed(choice)
        await ctx.show(display)

    async def authorize_state(self, ctx: ToolContext, title: str, display: Sequence[Display]) -> None:
        if self.mode is Mode.PLAN:
            raise PermissionDenied(PLAN_REFUSAL)
        if self.session.state is False:
            raise PermissionDenied("The user chose to reject memory updates in this session. " + DECLINED)
        if not (self.mode in (Mode.ACCEPT_EDITS, Mode.BYPASS) or self.session.state):
            choice = await self._ask(
                ctx, title, "edit", display, always=True,
                always_name="Allow memory updates for this session",
                reject_always_name="Reject memory updates for this session",
            )
            if choice in (ALLOW_ALWAYS, REJECT_ALWAYS):
                self.session.state = choice == ALLOW_ALWAYS
            _require_allowed(choice)
        await ctx.show(display)

    async def _ask(
        self,
        ctx: ToolContext,
        title: str,
        kind: ToolKind,
        display: Sequence[Display],
        *,
        always: bool,
        always_name: str = "",
        reject_always_name: str = "",
    ) -> str:
        options = [option(ALLOW_ONCE, "Allow once")]
        if always:
            options.append(option(ALLOW_ALWAYS, always_name))
        options.append(option(REJECT_ONCE, "Reject"))
        if always:
            options.append(option(REJECT_ALWAYS, reject_always_name))
        choice = await self.asker.ask(ctx, title=title, kind=kind, display=display, options=options)
        offered = {o["optionId"] for o in options}
        if choice == CANCELLED or choice in offered:
            return choice
        log.warning("permission: option %r was not offered; treating it as a rejection", choice)
        return REJECT_ONCE

    def describe(self) -> list[str]:
        """The grants in force, for logs and ``acp-hermes doctor``."""
        lines = [f"mode: {self.mode.value}"]
        if self.session.edits is not None:
            lines.append(f"edits this session: {'allowed' if self.session.edits else 'rejected'}")
        for key in sorted(self.session.allow_commands | self.project.allow):
            lines.append(f"allow command: {key}")
        for key in sorted(self.session.reject_commands | self.project.reject):
            lines.append(f"reject command: {key}")
        return lines


def _require_allowed(choice: str) -> None:
    if choice == CANCELLED:
        raise PermissionDenied("The permission request was cancelled; the action did not run.")
    if choice not in (ALLOW_ONCE, ALLOW_ALWAYS):
        raise PermissionDenied(DECLINED)


def _edit_title(changes: Sequence[FileChange], cwd: Path) -> str:
    if len(changes) != 1:
        return f"Edit {len(changes)} files"
    path = changes[0].path
    try:
        shown = str(path.relative_to(cwd))
    except ValueError:
        shown = str(path)
    verb = "Delete" if changes[0].new_text is None else ("Create" if changes[0].old_text is None else "Edit")
    return f"{verb} {shown}"
