"""Workspace trust: a workspace's own files change what the agent does only once the user trusts it.

DESIGN.md invariant 11. What a repository carries — instruction files, subdirectory hints, project
skills, its MCP servers, its settings (and hooks, once they exist: ``project_files.Gated.hooks``) —
reaches the model or runs only in a trusted workspace. The decision is the user's, made once per
repository and shared by every process (``memory.trust_store``): remembered, for one session, or by
the configuration (``trust: {ask: false}``) or the command line (``--trust``, ``ACP_HERMES_TRUST=1``)
for headless use. An untrusted workspace is never an error: the session works without them, and the
user's own memory, skills, config and MCP servers are unaffected. Trust is consent to load context,
never a grant: the permission gate and the sandbox hold as before.

``WorkspaceTrust`` is one session's standing (a child shares its parent's). ``before_turn`` runs before
a prompt's first model request: once per session, in an undecided workspace that carries something
(``project_files.find_gated``), it puts the one question (``WorkspaceAsker``: the client's own trust
dialog, a form, or a permission request); in a trusted one it asks about each project MCP server not
yet approved by its exact command (``tools.mcp.specs.fingerprint``). A decision made while the session
runs (that answer, ``/trust``, ``/untrust``, the client's ``_trust/decision``) applies at once
(``decide``): ``SessionServices.follow_trust`` builds its system prompt again — the one extra prompt-cache
miss a session may have — and its skills, hints, settings and project MCP servers follow.

Other features that load what a repository carries ask ``WorkspaceTrust.trusted`` (the session's
``services.trust``) before they do, and name what they found in ``project_files.Gated``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import anyio

from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.config import ProjectSettings, Settings
    from acp_hermes.core.choices import SessionChoices
    from acp_hermes.core.events import NoticeKind
    from acp_hermes.core.project_files import Gated, ProjectFiles
    from acp_hermes.core.runtime import Runtime
    from acp_hermes.core.state import SessionState
    from acp_hermes.permissions.gate import PermissionGate, PermissionOption, PermissionQuestion
    from acp_hermes_memory.trust_store import Repository, TrustEntry
    from acp_hermes_tools.mcp.servers import McpServers
    from acp_hermes_tools.mcp.specs import McpServerSpec

log = logging.getLogger(__name__)

Standing = Literal["trusted", "untrusted", "undecided"]
Decision = Literal["always", "session", "never", "not_now"]

# Why a workspace stands as it does, in the user's words (``/trust``, ``doctor``).
HEADLESS = "--trust / ACP_HERMES_TRUST=1"
CONFIG = "your config's `trust: {ask: false}`"
REMEMBERED = "your decision, remembered"
THIS_SESSION = "your decision, for this session"

# The answers' option kinds (``permissions.gate``: imported with the first question, not with the module,
# which ``starting_settings`` brings in on the way to answering session/new).
ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS, CANCELLED = (
    "allow_once", "allow_always", "reject_once", "reject_always", "cancelled")
_ANSWERS: dict[str, Decision] = {ALLOW_ALWAYS: "always", ALLOW_ONCE: "session", REJECT_ALWAYS: "never",
                                 REJECT_ONCE: "not_now", CANCELLED: "not_now"}


@value
class WorkspaceQuestion:
    """A question about the workspace rather than about a tool call: whether to trust it, or whether to
    start one of its MCP servers. At most one option of each kind (as every permission question)."""

    call_id: str
    kind: Literal["trust", "server"]
    title: str
    text: str  # Markdown: what was found, and what the answer does
    options: tuple[PermissionOption, ...]
    raw: Mapping[str, Any]  # what it is about, as data (the card's rawInput)

    def as_permission(self) -> PermissionQuestion:
        from acp_hermes.permissions.gate import PermissionQuestion
        from acp_hermes_tools.contracts import TextDisplay

        return PermissionQuestion(self.call_id, self.title, "other", (TextDisplay(self.text),), self.options)


class Services(Protocol):
    """What of a session's services (``core.services.SessionServices``) its workspace's trust reads and
    changes (a protocol: the services hold the trust)."""

    trust: WorkspaceTrust
    gate: PermissionGate
    mcp: McpServers | None

    @property
    def settings(self) -> Settings: ...

    def notify(self, text: str, kind: NoticeKind = "info") -> None: ...

    def add_mcp_servers(self, cwd: Path, specs: Sequence[McpServerSpec]) -> None: ...

    async def follow_trust(self, state: SessionState) -> None: ...


class Session(Protocol):
    """What of a session (``core.session.Session``) its workspace's trust reads and changes."""

    @property
    def id(self) -> str: ...

    @property
    def choices(self) -> SessionChoices: ...

    @property
    def state(self) -> SessionState: ...

    @property
    def services(self) -> Services: ...

    def set_choice(self, option_id: str, value: Any) -> None: ...


@runtime_checkable
class WorkspaceAsker(Protocol):
    """An asker that puts workspace questions the best way its client allows (``adapter.client``)."""

    async def ask_workspace(self, question: WorkspaceQuestion) -> str | None:
        """The option chosen, ``"cancelled"``, or None for a trust question when the client shows its
        own trust dialog and tells its decision itself (``_trust/decision``)."""
        ...


class WorkspaceTrust:
    """Whether one session's workspace may speak to the agent, and what it says once it may."""

    def __init__(self, runtime: Runtime, workspace: Path, extra: tuple[Path, ...], repository: Repository,
                 standing: Standing, source: str, *, approved: Iterable[str] = (), approve_all: bool = False) -> None:
        self.runtime = runtime
        self.workspace = workspace
        self.extra = extra
        self.repository = repository
        self.standing: Standing = standing
        self.source = source  # why it stands so ("" while undecided)
        self.asked = False  # the trust question was put (or needed no putting) in this session
        self.settled = False  # nothing is left to ask before a turn
        self.project: ProjectFiles | None = None  # a trusted workspace's own settings, as read
        self.approved = set(approved)  # fingerprints of project MCP servers the user approved
        self.declined: set[str] = set()  # ... and those refused in this session
        self.started: set[str] = set()  # ... and those started in this session
        self.approve_all = approve_all  # --trust: headless, nobody to ask about each server
        # Whether the session's system prompt was built with the workspace trusted (None: not known, a
        # session read back from the SessionDB): a decision that changes nothing there rebuilds nothing.
        self.prompt_trusted: bool | None = None
        self._merged: tuple[Settings, ProjectSettings] | None = None
        self._told = False  # the project settings' notice was given
        self._lock: anyio.Lock | None = None

    @property
    def trusted(self) -> bool:
        return self.standing == "trusted"

    @property
    def lock(self) -> anyio.Lock:
        """Held while questions are put: a second prompt sent at once waits for the first's answer."""
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    # -- what a trusted workspace says

    def read(self) -> None:
        """Read a trusted workspace's own settings (blocking); forget them when it is not trusted."""
        from acp_hermes.core.project_files import read_project

        self.project = read_project(self.workspace) if self.trusted else None
        self._merged, self._told = None, False

    @property
    def settings(self) -> Settings:
        """The user's settings, with a trusted project's ``.hermes/config.yaml`` merged over them."""
        base = self.runtime.settings
        if not self.trusted or self.project is None or not self.project.settings:
            return base
        if self._merged is None or self._merged[0] is not base:
            from acp_hermes.config import merge_project_settings

            self._merged = (base, merge_project_settings(base, self.project.settings))
        return self._merged[1].settings

    @property
    def project_message(self) -> str | None:
        """A trusted project's ``system_message``, scanned like an instruction file."""
        message = self.project.system_message if self.trusted and self.project is not None else None
        if message is None:
            return None
        from acp_hermes_memory.scan import guard_context_text

        return guard_context_text(".hermes/config.yaml system_message", message.strip())

    @property
    def shared_commands(self) -> frozenset[str]:
        """The command grants a trusted project shares (``.hermes/permissions.yaml``: sandbox only)."""
        return self.project.allow_commands if self.trusted and self.project is not None else frozenset()

    def notices(self) -> list[str]:
        """What of the project's settings was left out, said once per reading."""
        if self._told or not self.trusted or self.project is None:
            return []
        self._told = True
        self.settings  # noqa: B018  merged now: what it left out is known
        merged = self._merged[1] if self._merged is not None else None
        lines = list(self.project.problems) + list(merged.problems if merged else ())
        ignored = merged.ignored if merged else ()
        if ignored:
            from acp_hermes.config import PROJECT_KEYS

            keys = ", ".join(f"`{key}`" for key in ignored)
            lines.append(f".hermes/config.yaml: {keys} cannot be set by a project and "
                         f"{'is' if len(ignored) == 1 else 'are'} ignored (a project may set "
                         + ", ".join(f"`{key}`" for key in PROJECT_KEYS) + ")")
        return [f"⚠️ This workspace's settings: {'; '.join(lines)}."] if lines else []

    # -- its MCP servers

    def pending(self, taken: set[str]) -> list[McpServerSpec]:
        """The project's servers that wait for the user's approval (by exact command) in this session."""
        from acp_hermes_tools.mcp.specs import fingerprint

        if not self.trusted or self.project is None or self.approve_all:
            return []
        return [spec for spec in self.project.mcp_servers if spec.name not in taken
                and (key := fingerprint(spec)) not in self.approved and key not in self.declined]

    def startable(self, taken: set[str]) -> list[McpServerSpec]:
        """The project's approved servers not started yet (marked started now); a name the user's config
        or editor uses keeps its own server."""
        from acp_hermes_tools.mcp.specs import fingerprint

        if not self.trusted or self.project is None:
            return []
        specs = [spec for spec in self.project.mcp_servers if spec.name not in taken
                 and (self.approve_all or fingerprint(spec) in self.approved) and fingerprint(spec) not in self.started]
        self.started.update(fingerprint(spec) for spec in specs)
        return specs

    def forget_started(self) -> None:
        self.started.clear()


def open_trust(runtime: Runtime, workspace: Path, extra: tuple[Path, ...] = ()) -> WorkspaceTrust:
    """A session's trust as it opens (blocking: reads the trust file, and a trusted workspace's settings).

    Precedence: ``--trust`` for this process, then the user's remembered decision for the repository,
    then ``trust: {ask: false}``; otherwise undecided (asked before the first model request)."""
    from acp_hermes_memory.trust_store import repository_of

    repository = repository_of(workspace, Path.home())
    entry = None if repository.home else runtime.trust_store.entry(repository.root)
    standing, source = standing_of(entry, everything=runtime.trust_everything, ask=runtime.settings.trust.ask)
    trust = WorkspaceTrust(runtime, workspace, extra, repository, standing, source,
                           approved=entry.servers if entry is not None else (), approve_all=runtime.trust_everything)
    trust.read()
    return trust


def standing_of(entry: TrustEntry | None, *, everything: bool, ask: bool) -> tuple[Standing, str]:
    """A workspace's standing and why, from the user's remembered ``entry`` for its repository,
    ``--trust`` (``everything``) and the config's ``trust.ask``."""
    if everything:
        return "trusted", HEADLESS
    if entry is not None:
        return ("trusted" if entry.trusted else "untrusted"), REMEMBERED
    if not ask:
        return "trusted", CONFIG
    return "undecided", ""


def starting_settings(runtime: Runtime, workspace: Path) -> Settings:
    """The settings a new session in ``workspace`` starts with (its model and thinking level): a trusted
    project's merged over the user's (blocking: a few small reads)."""
    return open_trust(runtime, workspace).settings


# -- before a turn


async def before_turn(session: Session) -> None:
    """Before a prompt's first model request: the trust question, once per session in an undecided
    workspace that carries something; then, in a trusted one, each project MCP server not yet approved."""
    trust = session.services.trust
    if trust.settled:
        return
    async with trust.lock:
        if trust.settled:
            return
        if not trust.asked:
            trust.asked = True
            restored = trust.prompt_trusted is None  # its system prompt as stored, built in another standing
            if trust.standing == "undecided" or (restored and not trust.trusted):
                from acp_hermes.core.project_files import find_gated

                gated = await anyio.to_thread.run_sync(find_gated, trust.workspace, trust.extra)
                if not gated.empty and trust.standing == "undecided":
                    await _ask_trust(session, gated)
                if not gated.empty and not trust.trusted and trust.prompt_trusted is None:
                    # A restored session's stored prompt may carry what is not trusted (any more): built again.
                    await session.services.follow_trust(session.state)
        if trust.trusted:
            await _approve_servers(session)
        trust.settled = True


async def _ask_trust(session: Session, gated: Gated) -> None:
    answer = await _put(session, trust_question(session.services.trust, gated))
    if answer is None:  # the client shows its own trust dialog: its decision comes as _trust/decision
        where = session.services.trust.repository.root
        log.info("session %s: the client decides whether to trust %s", session.id, where)
        return
    await decide(session, _ANSWERS.get(answer, "not_now"), approve=gated.mcp_servers)


def trust_question(trust: WorkspaceTrust, gated: Gated) -> WorkspaceQuestion:
    """The one question: what the folder carries, and what trusting it does (and does not) do."""
    from acp_hermes.permissions.gate import PermissionOption

    where = trust.repository.root
    text = "\n".join([
        f"The folder `{where}` carries files that change what acp-hermes does. None of them has been "
        "loaded yet:", *gated.lines(), "",
        "Trusting it gives them to the model and starts its MCP servers. It grants no permission: edits and "
        "commands still ask as your mode requires.",
    ])
    if trust.repository.home:  # never remembered for the home folder
        options: tuple[PermissionOption, ...] = (PermissionOption(ALLOW_ONCE, "Trust it for this session"),
                                                 PermissionOption(REJECT_ONCE, "Not now"))
    else:
        options = (PermissionOption(ALLOW_ONCE, "Trust it for this session"),
                   PermissionOption(ALLOW_ALWAYS, "Trust this repository (remembered)"),
                   PermissionOption(REJECT_ONCE, "Not now"),
                   PermissionOption(REJECT_ALWAYS, "Don't trust it (remembered: never asked again)"))
    return WorkspaceQuestion(f"trust-{uuid.uuid4()}", "trust", f"Trust the folder {where}?", text, options,
                             {"folder": str(where), "found": gated.files()})


async def _approve_servers(session: Session) -> None:
    """Ask about each project MCP server not approved yet (by its exact command), then start the approved."""
    from acp_hermes_tools.mcp.specs import fingerprint

    trust = session.services.trust
    for spec in trust.pending(taken_names(session)):
        answer = await _put(session, server_question(trust, spec))
        key = fingerprint(spec)
        if answer in (ALLOW_ONCE, ALLOW_ALWAYS):
            trust.approved.add(key)
            if answer == ALLOW_ALWAYS:
                await anyio.to_thread.run_sync(trust.runtime.trust_store.approve_servers, trust.repository.root, [key])
        else:
            trust.declined.add(key)
            session.services.notify(f"The MCP server `{spec.name}` of this workspace was not started.", "trust")
    start_servers(session)


def server_question(trust: WorkspaceTrust, spec: McpServerSpec) -> WorkspaceQuestion:
    """Whether to start one project MCP server: its exact command (environment names, never values)."""
    from acp_hermes.permissions.gate import PermissionOption

    env = f" with the environment {', '.join(f'`{name}`' for name in sorted(spec.env))}" if spec.env else ""
    text = (f"This workspace names an MCP server that you have not approved in this form: `{spec.name}` "
            f"runs `{spec.target}`{env}. It was added or changed since you decided to trust the folder.")
    options = [PermissionOption(ALLOW_ONCE, "Start it for this session")]
    if trust.source == REMEMBERED:
        options.append(PermissionOption(ALLOW_ALWAYS, "Always start this exact server in this repository"))
    options.append(PermissionOption(REJECT_ONCE, "Don't start it"))
    return WorkspaceQuestion(f"mcp-server-{uuid.uuid4()}", "server", f"Start the MCP server {spec.name} of "
                             f"{trust.repository.root.name}?", text, tuple(options),
                             {"server": spec.name, "runs": spec.target, "environment": sorted(spec.env)})


def taken_names(session: Session) -> set[str]:
    """Server names the user's own config or editor already use (they win a name), and those running."""
    taken = set(session.services.trust.runtime.settings.mcp_servers)
    if session.services.mcp is not None:
        taken.update(connection.name for connection in session.services.mcp.connections)
    return taken


def start_servers(session: Session) -> None:
    session.services.add_mcp_servers(session.state.cwd, session.services.trust.startable(taken_names(session)))


async def _put(session: Session, question: WorkspaceQuestion) -> str | None:
    from acp_hermes_tools.contracts import PermissionDenied

    asker = session.services.gate.asker
    try:
        if isinstance(asker, WorkspaceAsker):
            return await asker.ask_workspace(question)
        return await asker.ask(question.as_permission())
    except PermissionDenied as refused:  # the editor failed the question: as if the user said "not now"
        log.warning("session %s: the workspace question failed: %s", session.id, refused)
        return CANCELLED


# -- a decision


async def decide(session: Session, decision: Decision, *, approve: Sequence[McpServerSpec] = ()) -> None:
    """Carry out ``decision`` for the session's repository; it applies to the session at once. An explicit
    trust approves the project MCP servers ``approve`` names (the ones the user was shown)."""
    trust = session.services.trust
    was = trust.trusted
    await anyio.to_thread.run_sync(record, trust, decision, approve)
    if trust.trusted != was:
        await apply(session)
    elif trust.trusted:
        start_servers(session)


def record(trust: WorkspaceTrust, decision: Decision, approve: Sequence[McpServerSpec] = ()) -> None:
    """Set ``trust``'s standing by ``decision`` and remember it where it is kept (blocking)."""
    from acp_hermes_tools.mcp.specs import fingerprint

    keys = [fingerprint(spec) for spec in approve]
    keep = not trust.repository.home
    store, root = trust.runtime.trust_store, trust.repository.root
    trust.asked = True
    if decision in ("always", "session"):
        if decision == "always" and keep:
            store.decide(root, trusted=True, servers=keys)
        trust.standing, trust.source = "trusted", REMEMBERED if decision == "always" and keep else THIS_SESSION
        trust.approved.update(keys)
    elif decision == "never":
        if keep:
            store.decide(root, trusted=False)
        trust.standing, trust.source = "untrusted", REMEMBERED if keep else THIS_SESSION
    log.info("workspace %s: %s (%s)", root, trust.standing, decision)


async def apply(session: Session) -> None:
    """The session follows its workspace's new standing: settings read (or forgotten), its system prompt,
    skills, hints and MCP servers reloaded; a project's model and thinking level become the session's
    where the user has not chosen others."""
    trust = session.services.trust
    await anyio.to_thread.run_sync(trust.read)
    trust.forget_started()
    await session.services.follow_trust(session.state)
    trust.settled = False  # servers added since the decision are asked about before the next turn
    if not trust.trusted:
        return
    for notice in trust.notices():
        session.services.notify(notice, "trust")
    _project_choices(session)
    start_servers(session)


def _project_choices(session: Session) -> None:
    from acp_hermes.core.choices import MODEL_OPTION, THOUGHT_OPTION
    from acp_hermes.core.errors import InvalidInput

    user, merged = session.services.trust.runtime.settings, session.services.settings
    for option, current, mine, theirs in ((MODEL_OPTION, session.choices.model, user.model, merged.model),
                                          (THOUGHT_OPTION, session.choices.thought_level, user.thought_level,
                                           merged.thought_level)):
        if current == mine != theirs:
            try:
                session.set_choice(option, theirs)
            except InvalidInput as exc:
                log.warning("session %s: the project's %s %r cannot be used: %s", session.id, option, theirs, exc)


# -- what is shown of it


@value
class TrustStatus:
    """A workspace's standing and what it carries, for a client's trust dialog and ``doctor``."""

    standing: Standing
    source: str
    workspace: Path
    repository: Repository
    gated: Gated | None  # what an untrusted (or undecided) workspace carries; None when trusted


def status_of(trust: WorkspaceTrust) -> TrustStatus:
    """``trust`` as shown (blocking: an untrusted workspace is searched for what it carries)."""
    from acp_hermes.core.project_files import find_gated

    gated = None if trust.trusted else find_gated(trust.workspace, trust.extra)
    return TrustStatus(trust.standing, trust.source, trust.workspace, trust.repository, gated)


def describe(status: TrustStatus) -> list[str]:
    """A workspace's standing for people, one line each (``/trust`` without a change, ``doctor``)."""
    where = status.repository.root
    if status.standing == "trusted":
        return [f"`{where}` is trusted ({status.source}): its instruction files, hints, skills, settings and "
                "MCP servers apply."]
    said = f"not trusted ({status.source})" if status.standing == "untrusted" else "not decided yet"
    lines = [f"`{where}` is {said}: nothing of its own reaches the model or runs."]
    if status.gated is not None and not status.gated.empty:
        lines += ["It carries:", *status.gated.lines()]
    elif status.gated is not None:
        lines.append("It carries nothing that trust would load.")
    if status.repository.home:
        lines.append("The home folder is never trusted as a repository: decisions about it last one session.")
    return lines
