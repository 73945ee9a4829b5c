"""The permission gate every mutation passes: it carries out the policy's verdict.

A refusal becomes ``PermissionDenied`` (its message is what the model is told, its ``shown`` what the
user reads); a question goes to the user through the ``Asker`` with the exact diff or command in front
of them, with at most one option of each kind (``PermissionQuestion`` checks it); an answer of
"always" is remembered narrowly, as the verdict's offer names it: edits or memory updates for
the rest of the session, a command's program and subcommand (``git status``, ``pytest``) for the
session and, in the grant store, for the project; all input to one background job that runs outside
the sandbox for the session only.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import (
    DECLINED,
    DECLINED_SHOWN,
    SANDBOXED,
    CommandRequest,
    EditRequest,
    ExternalToolRequest,
    GrantOffer,
    Grants,
    JobInputRequest,
    ReadRequest,
    Request,
    StateRequest,
    Surroundings,
    Verdict,
    decide,
)
from acp_hermes_memory.grants import GrantStore, ProjectGrants
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value
from acp_hermes_tools.context import CommandPermit, ReadPurpose, ToolContext, job_command_line
from acp_hermes_tools.contracts import (
    DiffDisplay,
    Display,
    FileChange,
    JobHandle,
    PermissionDenied,
    TextDisplay,
    ToolKind,
)

log = logging.getLogger(__name__)

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
REJECT_ALWAYS = "reject_always"
CANCELLED = "cancelled"


@value
class PermissionOption:
    """One answer the user may give; ``option_id`` is also its kind (once or always, allow or reject),
    so a question has one way to allow once: what it allows is said in its label and display."""

    option_id: str
    label: str


@value
class PermissionQuestion:
    """One question to the user. At most one option of each kind: a client may show an option only by
    its kind ("Accept", "Reject"), and two of one kind would look alike there (made impossible here)."""

    call_id: str
    title: str
    kind: ToolKind
    display: tuple[Display, ...]
    options: tuple[PermissionOption, ...]

    def __post_init__(self) -> None:
        kinds = [option.option_id for option in self.options]
        twice = sorted({kind for kind in kinds if kinds.count(kind) > 1})
        if twice:
            raise ValueError(f"a permission question offers more than one option of kind {', '.join(twice)}")


class Asker(Protocol):
    """Puts a permission question to the user."""

    async def ask(self, question: PermissionQuestion) -> str:
        """The chosen option id, or ``"cancelled"``; ``PermissionDenied`` with the reason when no answer
        could be had (the editor failed the question)."""
        ...


@dataclass
class SessionGrants:
    """What the user chose "always" for, for the rest of this session."""

    edits: bool | None = None
    allow_state: set[str] = field(default_factory=set)
    reject_state: set[str] = field(default_factory=set)
    allow_commands: set[str] = field(default_factory=set)
    reject_commands: set[str] = field(default_factory=set)
    readable_dirs: set[Path] = field(default_factory=set)
    unreadable_dirs: set[Path] = field(default_factory=set)
    allow_jobs: set[str] = field(default_factory=set)  # "<session id>/<job id>": never kept past the session
    reject_jobs: set[str] = field(default_factory=set)


class PermissionGate:
    """One per session; implements ``tools.context.Gate``."""

    def __init__(self, *, asker: Asker, mode: Mode, home: Path, hermes_home: Path, project: Path,
                 store: GrantStore, session_grants: SessionGrants | None = None) -> None:
        self.asker = asker
        self.mode = mode
        self._home = home
        self._hermes_home = hermes_home
        self._project = project
        self._store = store
        # A subagent shares its parent's: what the user allowed "always" for the session holds for its children.
        self.session = session_grants if session_grants is not None else SessionGrants()
        self._project_grants: ProjectGrants | None = None  # read from the store on first need
        self._told_about_sandbox = False

    # -- tools.context.Gate

    async def authorize_edits(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        display = tuple(DiffDisplay(str(c.path), c.old_text, c.new_text or "") for c in changes)
        title = ctx.title or _edit_title(changes, ctx.cwd)
        await self._settle(ctx, EditRequest(tuple(c.path for c in changes)), title, "edit", display)

    async def authorize_command(
        self, ctx: ToolContext, command: str, cwd: Path, *, outside_sandbox: bool = False
    ) -> CommandPermit:
        display: tuple[Display, ...] = (
            TextDisplay(f"$ {command}" + (f"\n# in {cwd}" if cwd != ctx.cwd else ""), fence="sh"),
        )
        title = ctx.title or f"Run {one_line(command, 80)}"
        sandbox = ctx.scope.sandbox
        available = sandbox is not None and sandbox.available
        if not available and not self._told_about_sandbox:
            self._told_about_sandbox = True
            detail = sandbox.status.detail if sandbox is not None else "not set up"
            display = (*display, TextDisplay(
                f"⚠️ Commands run without an OS sandbox in this session ({detail}): each one runs with "
                "your own permissions, so acp-hermes asks before commands as its mode requires."
                + (" In bypass, which your config allows without a sandbox (allow_unsandboxed_bypass), that "
                   "is unasked, except what acp-hermes rates dangerous or cannot see through."
                   if self.mode is Mode.BYPASS else "")
            ))
        elif available and sandbox is not None and sandbox.holds_home and not self._told_about_sandbox:
            from acp_hermes_tools.sandbox import HOME_NOTICE

            self._told_about_sandbox = True
            display = (*display, TextDisplay(HOME_NOTICE))
        network_allowed = available and sandbox is not None and sandbox.network_allowed
        request = CommandRequest(command, available, network_allowed, leave_sandbox=outside_sandbox, cwd=cwd)
        verdict = await self._settle(ctx, request, title, "execute", display)
        from acp_hermes.permissions.read_only import reads_only  # big rule tables: kept off start-up

        read_only = reads_only(command, home=self._home, roots=ctx.roots, cwd=cwd)
        return CommandPermit(sandboxed=verdict.sandboxed, network=verdict.network, read_only=read_only)

    async def authorize_restore(self, ctx: ToolContext, changes: Sequence[FileChange], label: str,
                                display: Sequence[Display], *, requested: bool = False) -> None:
        """A restore of ``changes`` (``/rollback``), decided as the edit it is. When the mode asks, the
        user allows it (the option named ``label``) or keeps things as they are; it holds unasked when
        the client ``requested`` this very restore (the user asked there)."""
        title = ctx.title or _edit_title(changes, ctx.cwd)
        where = Surroundings(self._home, self._hermes_home, ctx.roots)
        verdict = decide(EditRequest(tuple(c.path for c in changes)), self.mode, await self.grants(), where)
        if verdict.outcome == "refuse":
            raise PermissionDenied(verdict.message, verdict.shown)
        if verdict.outcome == "allow" or requested:
            return
        options = (PermissionOption(ALLOW_ONCE, label), PermissionOption(REJECT_ONCE, "Keep things as they are"))
        choice = await self.asker.ask(PermissionQuestion(ctx.call_id, title, "edit", tuple(display), options))
        if choice == CANCELLED:
            raise PermissionDenied(NOT_ASKED, "Nothing was restored: the question was cancelled.")
        if choice != ALLOW_ONCE:
            raise PermissionDenied(DECLINED, "Nothing was restored: you chose to keep things as they are.")

    async def authorize_state(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        display = tuple(DiffDisplay(str(c.path), c.old_text, c.new_text or "") for c in changes)
        subject = _state_subject(changes, Path(os.path.realpath(self._hermes_home / "skills")))
        title = ctx.title or f"Update {subject}"
        await self._settle(ctx, StateRequest(subject), title, "edit", display)

    async def authorize_read(self, ctx: ToolContext, paths: Sequence[Path], purpose: ReadPurpose = "file", *,
                             links: Mapping[Path, Path] | None = None) -> None:
        links = links or {}
        # A hard link to a secret is decided as a read of that secret: it asks, with its reason.
        request = ReadRequest(tuple(links.get(path, path) for path in paths), purpose)
        shown = ", ".join(str(path) for path in paths)
        notes = [f"{path} is a hard link to {secret}" for path, secret in links.items()]
        display: tuple[Display, ...] = (TextDisplay("\n".join([f"Read {shown}", *notes])),)
        title = ctx.title or f"Read {one_line(shown, 80)}"
        if links:
            secrets = ", ".join(_home_relative(secret, self._home) for secret in links.values())
            title += f" — a hard link to {one_line(secrets, 80)}"
        await self._settle(ctx, request, title, "read", display, show=False)

    async def authorize_external(self, ctx: ToolContext, server: str, tool: str, arguments: dict[str, Any], *,
                                 read_only: bool) -> None:
        shown = json.dumps(arguments, ensure_ascii=False, indent=2) if arguments else "(no arguments)"
        display: tuple[Display, ...] = (TextDisplay(shown, fence="json"),)
        title = ctx.title or f"Run {tool} ({server})"
        await self._settle(ctx, ExternalToolRequest(server, tool, read_only), title, "execute", display,
                           show=not read_only)

    async def authorize_job_input(self, ctx: ToolContext, job: JobHandle, text: str, *, eof: bool = False) -> None:
        from acp_hermes.permissions.job_input import job_input_display, job_input_request

        sandbox = ctx.scope.sandbox
        available = sandbox is not None and sandbox.available
        request = job_input_request(ctx.session_id, job.job_id, job_command_line(job, "write", text), job.cwd,
                                    sandbox=available)
        display = (job_input_display(job.job_id, job.command, text, eof=eof, sandbox=available),)
        await self._settle(ctx, request, ctx.title or f"Send input to {job.job_id}", "execute", display)

    # -- carrying out a verdict

    async def _settle(self, ctx: ToolContext, request: Request, title: str, kind: ToolKind,
                      display: tuple[Display, ...], *, show: bool = True) -> Verdict:
        where = Surroundings(self._home, self._hermes_home, ctx.roots)
        verdict = decide(request, self.mode, await self.grants(), where)
        log.debug("permission for call %s (%s, mode %s): %s — %s", ctx.call_id, type(request).__name__,
                  self.mode.value, verdict.outcome, "; ".join(verdict.reasons) or "no reason given")
        if verdict.outcome == "refuse":
            log.info("permission: refused (%s)", "; ".join(verdict.reasons))
            raise PermissionDenied(verdict.message, verdict.shown)
        if verdict.outcome == "allow":
            log.info("permission: allowed by %s", "; ".join(verdict.reasons))
        else:
            if verdict.reasons:
                log.info("permission: needs approval (%s)", "; ".join(verdict.reasons))
            choice = await self._ask(ctx, _question_title(title, request, verdict), kind, display, verdict.offer)
            log.debug("permission for call %s: the user answered %s", ctx.call_id, choice)
            if choice in (ALLOW_ALWAYS, REJECT_ALWAYS) and verdict.offer is not None:
                await self._remember(verdict.offer, allow=choice == ALLOW_ALWAYS)
            _require_allowed(choice)
        if show:
            await ctx.show(display)
        return verdict

    async def _ask(self, ctx: ToolContext, title: str, kind: ToolKind, display: tuple[Display, ...],
                   offer: GrantOffer | None) -> str:
        options = [PermissionOption(ALLOW_ONCE, "Allow once")]
        if offer is not None:
            options.append(PermissionOption(ALLOW_ALWAYS, offer.allow_label))
        options.append(PermissionOption(REJECT_ONCE, "Reject"))
        if offer is not None:
            options.append(PermissionOption(REJECT_ALWAYS, offer.reject_label))
        choice = await self.asker.ask(PermissionQuestion(ctx.call_id, title, kind, display, tuple(options)))
        if choice == CANCELLED or any(choice == option.option_id for option in options):
            return choice
        log.warning("permission: option %r was not offered; treating it as a rejection", choice)
        return REJECT_ONCE

    async def _remember(self, offer: GrantOffer, *, allow: bool) -> None:
        if offer.scope == "edits":
            self.session.edits = allow
        elif offer.scope == "state":
            (self.session.allow_state if allow else self.session.reject_state).update(offer.keys)
        elif offer.scope == "reads":
            (self.session.readable_dirs if allow else self.session.unreadable_dirs).update(map(Path, offer.keys))
        elif offer.scope == "jobs":  # one job of one session: nothing to keep for the project
            (self.session.allow_jobs if allow else self.session.reject_jobs).update(offer.keys)
        else:
            keys = offer.keys if allow or offer.rejected_keys is None else offer.rejected_keys
            (self.session.allow_commands if allow else self.session.reject_commands).update(keys)
            self._project_grants = await anyio.to_thread.run_sync(
                lambda: self._store.remember(self._project, keys, allow=allow)
            )
        log.info("permission: remembered %s %s", "allow" if allow else "reject", offer.keys or offer.scope)

    # -- what is in force

    async def grants(self) -> Grants:
        if self._project_grants is None:
            self._project_grants = await anyio.to_thread.run_sync(self._store.project, self._project)
        project = self._project_grants
        return Grants(
            edits=self.session.edits,
            allowed_state=frozenset(self.session.allow_state),
            rejected_state=frozenset(self.session.reject_state),
            allowed_commands=frozenset(self.session.allow_commands | project.allow),
            rejected_commands=frozenset(self.session.reject_commands | project.reject),
            readable_dirs=frozenset(self.session.readable_dirs),
            unreadable_dirs=frozenset(self.session.unreadable_dirs),
            allowed_jobs=frozenset(self.session.allow_jobs),
            rejected_jobs=frozenset(self.session.reject_jobs),
        )

    async def describe(self) -> list[str]:
        """The mode and the grants in force, one line each (``/permissions``)."""
        grants = await self.grants()
        lines = [f"mode: {self.mode.value}"]
        if grants.edits is not None:
            lines.append(f"edits this session: {'allowed' if grants.edits else 'rejected'}")
        lines += [f"changes to {subject} this session: allowed" for subject in sorted(grants.allowed_state)]
        lines += [f"changes to {subject} this session: rejected" for subject in sorted(grants.rejected_state)]
        lines += [_grant_line("allow", key) for key in sorted(grants.allowed_commands)]
        lines += [_grant_line("reject", key) for key in sorted(grants.rejected_commands)]
        lines += [f"read this session: {path}" for path in sorted(grants.readable_dirs)]
        lines += [f"no reading this session: {path}" for path in sorted(grants.unreadable_dirs)]
        lines += [f"all input to {_job_name(key)} this session: allowed" for key in sorted(grants.allowed_jobs)]
        lines += [f"all input to {_job_name(key)} this session: rejected" for key in sorted(grants.rejected_jobs)]
        return lines


def _grant_line(verdict: str, key: str) -> str:
    if key.startswith("mcp:"):
        return f"{verdict} MCP tool: {key.removeprefix('mcp:')}"
    if key.startswith("mcp-server:"):
        return f"trusted MCP server (its read-only tools run unasked): {key.removeprefix('mcp-server:')}"
    if key.startswith(SANDBOXED):
        return f"{verdict} command in the sandbox: {key.removeprefix(SANDBOXED)}"
    return f"{verdict} command: {key}"


def _job_name(key: str) -> str:
    """``job-1 of session 1a2b3c4d`` for a job grant's key (a subagent's jobs share its parent's grants)."""
    session, _, job = key.rpartition("/")
    return f"{job} of session {session[:8]}"


def _question_title(title: str, request: Request, verdict: Verdict) -> str:
    if not verdict.reasons:
        return title
    if isinstance(request, CommandRequest | JobInputRequest):
        return f"{title} — {', '.join(verdict.reasons)}"
    return f"{title} ({verdict.reasons[0]})"


def _home_relative(path: Path, home: Path) -> str:
    """``path`` as ``~/...`` when it is under ``home``: shorter in a question's title."""
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)


NOT_ASKED = "The permission request was cancelled; the action did not run."
NOT_ASKED_SHOWN = "Not done: the permission question was cancelled."


def _require_allowed(choice: str) -> None:
    if choice == CANCELLED:
        raise PermissionDenied(NOT_ASKED, NOT_ASKED_SHOWN)
    if choice not in (ALLOW_ONCE, ALLOW_ALWAYS):
        raise PermissionDenied(DECLINED, DECLINED_SHOWN)


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


_SKILL_PARTS = frozenset({"SKILL.md", "references", "templates", "scripts", "assets"})


def _state_subject(changes: Sequence[FileChange], skills_root: Path) -> str:
    """What a store change touches, as narrowly as "always" should cover it: one skill, or memory."""
    for change in changes:
        try:
            parts = change.path.relative_to(skills_root).parts
        except ValueError:
            continue
        cut = next((n for n, part in enumerate(parts) if part in _SKILL_PARTS), len(parts))
        return f"skill {'/'.join(parts[:cut])}"
    return "memory"
