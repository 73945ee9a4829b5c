"""The permission gate every mutation passes: it carries out the policy's verdict.

Every request (``tools.contracts.Request``: an edit, a restore, a store change, a read, an MCP tool, a
command, input for a job) comes through one door, ``authorize``, and takes one path: the policy's
verdict, then a refusal, a question or an allowance. A new kind of access is a request type and a
policy branch, never a new door.

A refusal becomes ``PermissionDenied`` (its message is what the model is told, its ``shown`` what the
user reads); a question goes to the user through the ``Asker`` with the exact diff or command in front
of them, with at most one option of each kind (``PermissionQuestion`` checks it); an answer of
"always" is remembered narrowly, as the verdict's offer names it: edits or memory updates for
the rest of the session, a command's program and subcommand (``git status``, ``pytest``) for the
session and, in the grant store, for the project; all input to one background job that runs outside
the sandbox for the session only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import anyio

from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import (
    DECLINED,
    DECLINED_SHOWN,
    SANDBOXED,
    GrantOffer,
    Grants,
    Verdict,
    decide,
    sandboxed_key,
)
from acp_hermes_memory.grants import GrantStore, ProjectGrants
from acp_hermes_memory.values import value
from acp_hermes_tools.context import Permit, ToolContext
from acp_hermes_tools.contracts import (
    Choices,
    Command,
    Confirm,
    Display,
    FileChange,
    JobInput,
    PermissionDenied,
    Request,
    State,
    Surroundings,
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


class SessionGrants:
    """What the user chose "always" for, for the rest of this session (a plain class, not a dataclass:
    defining one costs a millisecond on the way to the first prompt; ``None``: a new empty set)."""

    __slots__ = ("allow_commands", "allow_jobs", "allow_state", "edits", "readable_dirs", "reject_commands",
                 "reject_jobs", "reject_state", "unreadable_dirs")

    def __init__(self, edits: bool | None = None, allow_state: set[str] | None = None,
                 reject_state: set[str] | None = None, allow_commands: set[str] | None = None,
                 reject_commands: set[str] | None = None, readable_dirs: set[Path] | None = None,
                 unreadable_dirs: set[Path] | None = None, allow_jobs: set[str] | None = None,
                 reject_jobs: set[str] | None = None) -> None:
        self.edits = edits
        self.allow_state = set() if allow_state is None else allow_state
        self.reject_state = set() if reject_state is None else reject_state
        self.allow_commands = set() if allow_commands is None else allow_commands
        self.reject_commands = set() if reject_commands is None else reject_commands
        self.readable_dirs = set() if readable_dirs is None else readable_dirs
        self.unreadable_dirs = set() if unreadable_dirs is None else unreadable_dirs
        # "<session id>/<job id>": never kept past the session
        self.allow_jobs = set() if allow_jobs is None else allow_jobs
        self.reject_jobs = set() if reject_jobs is None else reject_jobs


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
        # Commands a trusted workspace shares (.hermes/permissions.yaml, core.trust): they hold only in
        # the sandbox, and the user's own rejects win.
        self.shared_commands: frozenset[str] = frozenset()
        self._told_about_sandbox = False
        # Calls a PreToolUse hook allowed (call id → the hook): a question is skipped, never a refusal or the sandbox.
        self.hook_allowed: dict[str, str] = {}

    # -- tools.context.Gate

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        """Decide ``request`` and carry the verdict out: refuse, or ask (with the request's display, its
        own words if it has any, and "always" where the verdict offers it) and obey the answer, or allow;
        an allowed request then shows its display. A shell line is analysed here, once, and carried in
        the request: the policy reads its risk and keys, the checkpoint layer (from the permit) whether
        it may write files."""
        where = Surroundings(self._home, self._hermes_home, ctx.roots, ctx.cwd)
        notice: tuple[Display, ...] = ()
        if isinstance(request, Command | JobInput):
            where, request, notice = self._shell(ctx, request, where)
        elif isinstance(request, State):  # what "always" covers comes from the paths, never from the caller
            skills = Path(os.path.realpath(self._hermes_home / "skills"))
            request = State(request.changes, _state_subject(request.changes, skills))
        display = (*request.display(where), *notice)
        verdict = _hook_allowed(decide(request, self.mode, await self.grants(), where), request, where,
                                self.hook_allowed.get(ctx.call_id))
        log.debug("permission for call %s (%sRequest, mode %s): %s — %s", ctx.call_id, type(request).__name__,
                  self.mode.value, verdict.outcome, "; ".join(verdict.reasons) or "no reason given")
        if verdict.outcome == "refuse":
            log.info("permission: refused (%s)", "; ".join(verdict.reasons))
            raise PermissionDenied(verdict.message, verdict.shown)
        if verdict.outcome == "allow":
            log.info("permission: allowed by %s", "; ".join(verdict.reasons))
        else:
            if verdict.reasons:
                log.info("permission: needs approval (%s)", "; ".join(verdict.reasons))
            choices = request.choices or _USUAL
            title = _question_title(request.title(where, ctx.title), request, verdict)
            choice = await self._ask(ctx, title, request.kind, display, verdict.offer, choices)
            log.debug("permission for call %s: the user answered %s", ctx.call_id, choice)
            if choice in (ALLOW_ALWAYS, REJECT_ALWAYS) and verdict.offer is not None:
                await self._remember(verdict.offer, allow=choice == ALLOW_ALWAYS)
            _require_allowed(choice, choices)
        if request.shown:
            await ctx.show(display)
        return Permit(verdict.sandboxed, verdict.network, request.analysis if isinstance(request, Command) else None)

    # -- what only the session knows of a request

    def _shell(self, ctx: ToolContext, request: Command | JobInput,
               where: Surroundings) -> tuple[Surroundings, Command | JobInput, tuple[Display, ...]]:
        """A shell line's surroundings (whether the session has an OS sandbox, and its network), its
        analysis and — with the first command — what the sandbox means for it."""
        from acp_hermes.permissions.shell.analysis import Where, analyse  # rule tables: kept off start-up

        sandbox = ctx.scope.sandbox
        available = sandbox is not None and sandbox.available
        network_allowed = available and sandbox is not None and sandbox.network_allowed
        where = Surroundings(where.home, where.hermes_home, where.roots, where.cwd, available, network_allowed)
        # Analysed here, whatever the request carried: the verdict rests on this analysis alone.
        request = request.analysed(analyse(request.line, Where(self._home, ctx.roots, request.cwd, self._hermes_home)))
        if not isinstance(request, Command) or self._told_about_sandbox:
            return where, request, ()
        if not available:
            self._told_about_sandbox = True
            detail = sandbox.status.detail if sandbox is not None else "not set up"
            return where, request, (TextDisplay(
                f"⚠️ Commands run without an OS sandbox in this session ({detail}): each one runs with "
                "your own permissions, so acp-hermes asks before commands as its mode requires."
                + (" In bypass, which your config allows without a sandbox (allow_unsandboxed_bypass), that "
                   "is unasked, except what acp-hermes rates dangerous or cannot see through."
                   if self.mode is Mode.BYPASS else "")
            ),)
        if sandbox is not None and sandbox.holds_home:
            from acp_hermes_tools.sandbox import HOME_NOTICE

            self._told_about_sandbox = True
            return where, request, (TextDisplay(HOME_NOTICE),)
        return where, request, ()

    # -- carrying out a verdict

    async def _ask(self, ctx: ToolContext, title: str, kind: ToolKind, display: tuple[Display, ...],
                   offer: GrantOffer | None, choices: Choices) -> str:
        allow = [PermissionOption(ALLOW_ONCE, choices.allow)]
        reject = [PermissionOption(REJECT_ONCE, choices.reject)]
        if offer is not None:
            allow.append(PermissionOption(ALLOW_ALWAYS, offer.allow_label))
            reject.append(PermissionOption(REJECT_ALWAYS, offer.reject_label))
        # Clients preselect the first option (Toad, avante: Enter takes it): never one that replaces the user's work.
        options = [*reject, *allow] if choices.reject_first else [*allow, *reject]
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
            allowed_commands=frozenset(self.session.allow_commands | project.allow
                                       | {sandboxed_key(key) for key in self.shared_commands}),
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
        shared = {sandboxed_key(key) for key in self.shared_commands}
        lines += [_grant_line("allow", key) for key in sorted(grants.allowed_commands - shared)]
        lines += [f"allow command in the sandbox, shared by the workspace: {key}"
                  for key in sorted(self.shared_commands)]
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


def _hook_allowed(verdict: Verdict, request: Request, where: Surroundings, hook: str | None) -> Verdict:
    """A question a PreToolUse hook's "allow" answers: never one that would take a command out of the
    sandbox (that stays the user's), never a refusal (plan mode, a catastrophic command)."""
    if hook is None or verdict.outcome != "ask" or isinstance(request, Confirm):
        return verdict
    if isinstance(request, Command | JobInput) and where.sandbox and not verdict.sandboxed:
        return verdict
    return Verdict("allow", (f"allowed by the hook {hook}",), sandboxed=verdict.sandboxed, network=verdict.network)


def _question_title(title: str, request: Request, verdict: Verdict) -> str:
    if not verdict.reasons:
        return title
    if isinstance(request, Command | JobInput):
        return f"{title} — {', '.join(verdict.reasons)}"
    return f"{title} ({verdict.reasons[0]})"


NOT_ASKED = "The permission request was cancelled; the action did not run."
NOT_ASKED_SHOWN = "Not done: the permission question was cancelled."
_USUAL = Choices("Allow once", "Reject", DECLINED_SHOWN, NOT_ASKED_SHOWN)


def _require_allowed(choice: str, choices: Choices) -> None:
    if choice == CANCELLED:
        raise PermissionDenied(NOT_ASKED, choices.cancelled)
    if choice not in (ALLOW_ONCE, ALLOW_ALWAYS):
        raise PermissionDenied(DECLINED, choices.rejected)


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
