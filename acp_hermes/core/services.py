"""What one session reaches outside itself: the gate, its tools' scope, checkpoints, budget, MCP servers,
the memory provider, the API's web tools, and how it talks to the user.

``SessionServices`` lives as long as its session and is built complete by ``core.sessions.SessionManager``
(``build_services``): the event sink, permission asker and editor it is given, how it starts background
work (``spawn``), how it makes children (``children``), what it does after its first exchange (names
itself) and how compaction rebuilds its system prompt. A child's checkpoints and budget are its
parent's. Nothing here holds the conversation (``core.state``) or runs a turn (``core.turn``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_hermes.config import Settings
from acp_hermes.core.events import Event, EventSink, NoticeKind, SessionEvent, UsageReported
from acp_hermes.model.pricing import context_window, price_of
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import Editor, ToolEventSink

if TYPE_CHECKING:
    from acp_hermes.core.budget import Budget, Spend
    from acp_hermes.core.checkpoints import SessionCheckpoints
    from acp_hermes.core.hints import SubdirectoryHintTracker
    from acp_hermes.core.hooks import SessionHooks
    from acp_hermes.core.job_notices import JobNotices
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.core.memory_providers import MemoryProviders
    from acp_hermes.core.quotas import Quotas
    from acp_hermes.core.review import Nudges, Proposal
    from acp_hermes.core.runtime import Runtime, SessionAuxiliary
    from acp_hermes.core.state import SessionState
    from acp_hermes.core.trust import WorkspaceTrust
    from acp_hermes.core.web import WebTools
    from acp_hermes.model.types import Usage
    from acp_hermes.permissions.gate import Asker, PermissionGate
    from acp_hermes_memory.session_db import SessionDB
    from acp_hermes_tools.mcp.connection import McpConnection
    from acp_hermes_tools.mcp.servers import McpServers
    from acp_hermes_tools.mcp.specs import McpServerSpec
    from acp_hermes_tools.registry import Tool, ToolCall, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class Child(Protocol):
    """What a session does to its running children: its cancel and its mode reach them (and the user's
    stop, by the child's id)."""

    @property
    def id(self) -> str: ...

    def cancel(self) -> None: ...

    def set_choice(self, option_id: str, value: Any) -> None: ...


class ChildMaker(Protocol):
    """Which children a session has running, and its ``delegate_task`` tool that makes them
    (``core.sessions.SessionManager``: the one keeper of who is whose child, with ``core.delegation``)."""

    def children_of(self, parent_id: str) -> Sequence[Child]: ...

    def delegate_tool(self, parent_id: str) -> Tool: ...


class SessionServices:
    """One session's ways out, and what it keeps of them (its MCP servers, held review proposals)."""

    def __init__(self, *, runtime: Runtime, session_id: str, subagent: SubagentSpec | None, sink: EventSink,
                 editor: Editor, gate: PermissionGate, tools: ToolScope, checkpoints: SessionCheckpoints,
                 budget: Budget, quotas: Quotas, web: WebTools, auxiliary: SessionAuxiliary,
                 hints: SubdirectoryHintTracker,
                 job_notices: JobNotices, nudges: Nudges, spawn: Spawn, children: ChildMaker,
                 on_first_exchange: Callable[[], None], rebuild_prompt: Callable[[], str],
                 trust: WorkspaceTrust, hooks: Callable[[SessionServices], SessionHooks]) -> None:
        self.runtime = runtime
        # Whether its workspace may speak (core.trust): its instruction files, hints, skills, settings and MCP
        # servers are the session's only while it is trusted. A child's is its parent's.
        self.trust = trust
        self._session_id = session_id
        self._subagent = subagent
        self.sink = sink
        self.editor = editor
        self.gate = gate
        self.tools = tools
        self.checkpoints = checkpoints  # a child's are its parent's: the parent's turn is what a rollback undoes
        self.budget = budget  # a child's is its parent's: what it spends counts there, and those limits stop it
        self.quotas = quotas  # the API's rate limits and the budget, as meters (``core.quotas``)
        self.web = web  # the API's web search and fetch, while the endpoint takes them
        self.auxiliary = auxiliary
        self.hints = hints
        self.job_notices = job_notices  # who hears of a background job's end: the model (in a turn) or the user
        self.nudges = nudges
        self.spawn = spawn  # runs work beside the session: reviews, MCP servers, notices, its title
        self.children = children
        self.on_first_exchange = on_first_exchange  # called once, after the first turn that completes untitled
        self.rebuild_prompt = rebuild_prompt  # a fresh system prompt (files as they are now): compaction only
        self.proposals: list[Proposal] = []  # review writes held for the user's approval (default mode)
        self.reviews: set[anyio.CancelScope] = set()  # running background reviews: cancelled with the session
        self.naming_started = False
        self.closed = False
        self.mcp: McpServers | None = None  # this session's MCP servers (connect_mcp)
        self._mcp_registry: tuple[int, ToolRegistry] | None = None  # the registry with their tools, by version
        self._own_registry: ToolRegistry | None = None  # the runtime's tools as this session has them
        self._provider_tools_added = False  # the external memory provider's tools are in _own_registry
        self.provider_turns = 0  # turns the memory provider was told of (on_turn_start's number)
        self.hooks = hooks(self)  # the user's own programs at the session's key moments (core.hooks)

    @property
    def settings(self) -> Settings:
        """The user's settings, with a trusted workspace's own merged over them (``core.trust``)."""
        return self.trust.settings

    @property
    def db(self) -> SessionDB:
        return self.runtime.db

    async def emit(self, event: Event) -> None:
        await self.sink.emit(event)

    def notify(self, text: str, kind: NoticeKind = "info") -> None:
        """Tell the user ``text`` now, outside any turn (a server's failure; trust and hook messages
        pass their ``kind``), as a notice (``core.notices``)."""
        _notifier(self._session_id, self.sink, self.spawn, kind)(text)

    def tool_context(self, call_id: str, title: str, sink: ToolEventSink | None = None) -> ToolContext:
        """The checked doors of one call (a turn's, or one the session makes itself: an export, a rollback)."""
        return ToolContext(call_id=call_id, scope=self.tools, editor=self.editor, gate=self.gate,
                           sink=sink or self.sink, title=title)

    # -- tools

    @property
    def registry(self) -> ToolRegistry:
        """This session's tools (a child's: its toolsets'), ``delegate_task`` where it may delegate, and
        the tools of its MCP servers that are ready now."""
        if self._own_registry is None:
            self._own_registry = self._tools_of_its_own()
        base = self._own_registry
        if self.mcp is None or not self.mcp.tools():
            return base
        if self._mcp_registry is None or self._mcp_registry[0] != self.mcp.version:
            self._mcp_registry = (self.mcp.version, base.extended(self.mcp.tools()))
        return self._mcp_registry[1]

    def _tools_of_its_own(self) -> ToolRegistry:
        tools = self.runtime.registry
        may_delegate = self.settings.delegation.enabled
        if self._subagent is not None:
            tools, may_delegate = tools.only(self._subagent.tool_names), self._subagent.may_delegate
        if self._provider_tools_added:  # an external memory provider's tools, for the user's own sessions
            tools = tools.extended(self.runtime.memory_providers.tools())
        return tools.extended([self.children.delegate_tool(self._session_id)]) if may_delegate else tools

    def base_tool_names(self) -> list[str]:
        """The built-in tools, of which a child's toolsets pick."""
        return self.runtime.registry.names

    # -- MCP servers

    def connect_mcp(self, cwd: Path, from_editor: Sequence[McpServerSpec]) -> None:
        """Start the configured MCP servers and the editor's (which win a shared name), in the background.

        Nothing here waits for a server. A config entry that cannot be used is told to the user like a
        server that fails. The manager calls this as it opens the session.
        """
        user = self.runtime.settings  # the user's own servers (a project's are its own, approved one by one)
        trust = self.trust
        project = trust.project.mcp_servers if trust.trusted and trust.project is not None else ()
        if not user.mcp_servers and not from_editor and not project:
            return
        from acp_hermes_tools.mcp.specs import merged, parse_configured

        configured, problems = parse_configured(user.mcp_servers)
        for problem in problems:
            self.notify(f"⚠️ Ignoring an MCP server in the config: {problem}")
        specs = merged(configured, from_editor)
        # A trusted workspace's approved servers, under names neither the user's config nor the editor uses.
        trust.forget_started()
        specs += trust.startable({*user.mcp_servers, *(spec.name for spec in specs)})
        if specs:
            self.mcp = None  # opened again (a load of a live session): a fresh set, as before
            self.add_mcp_servers(cwd, specs)

    def add_mcp_servers(self, cwd: Path, specs: Sequence[McpServerSpec]) -> None:
        """Start ``specs`` beside the session's running servers, in the background."""
        if not specs:
            return
        if self.mcp is None:
            from acp_hermes_tools.mcp.servers import McpServers

            self.mcp = McpServers(specs, cwd, on_change=self._mcp_changed)
            self.mcp.start(self.spawn)
        else:
            self.mcp.add(specs, self.spawn)
        log.info("session %s: connecting %d MCP server(s)", self._session_id, len(specs))

    async def follow_trust(self, state: SessionState) -> None:
        """The workspace's trust changed while the session runs (``core.trust``): the system prompt is
        built again unless it was built so already — the session's one extra prompt-cache miss — and
        stored; skills, hints, the project's shared grants and its MCP servers follow the new standing."""
        from dataclasses import replace

        trust = self.trust
        trusted = trust.trusted
        if trust.prompt_trusted != trusted and state.subagent is None:
            prompt = await anyio.to_thread.run_sync(self.rebuild_prompt)
            segment, db = state.transcript.session_id, self.db
            await anyio.to_thread.run_sync(lambda: db.update_session(segment, system_prompt=prompt))
            state.system_prompt = prompt
        skills = await anyio.to_thread.run_sync(self.runtime.skills_for, state.cwd, trusted)
        self.tools = replace(self.tools, services=replace(self.tools.services, skills=skills))
        self.hints.enabled = trusted
        self.gate.shared_commands = trust.shared_commands
        self._own_registry, self._mcp_registry = None, None  # the project's settings may change delegation
        if not trusted and self.mcp is not None:
            self.mcp.drop("project")

    def _mcp_changed(self, connection: McpConnection) -> None:
        if connection.status == "failed" and not self.closed:
            what = "stopped working" if connection.tools else "could not be connected"
            self.notify(f"⚠️ MCP server `{connection.name}` {what}: {connection.detail}. "
                        "The session goes on without its tools; `/mcp` shows every server.")

    # -- the external memory provider (its plugin API keeps Hermes's signatures: messages in the API's form)

    async def memory_providers(self) -> MemoryProviders | None:
        """The external memory provider's manager when one is configured (loaded off the event loop,
        with its tools, which join this session's registry)."""
        if not self.settings.memory.providers:
            return None
        runtime = self.runtime

        def load() -> MemoryProviders:
            providers = runtime.memory_providers
            providers.tools()
            return providers

        providers = await anyio.to_thread.run_sync(load)
        if providers.tools() and not self._provider_tools_added:
            self._provider_tools_added, self._own_registry, self._mcp_registry = True, None, None  # rebuilt with them
        return providers

    async def memory_provider_summary(self) -> list[str]:
        """What ``/memory`` shows of the external memory provider (nothing when none is configured)."""
        if not self.settings.memory.providers:
            return []
        runtime = self.runtime
        return await anyio.to_thread.run_sync(lambda: runtime.memory_providers.summary())

    def publish(self, event: SessionEvent) -> None:
        """What happened in this session that the user is not shown: the external memory provider, if one
        is configured, hears of it (in the background; a child's work is its parent's business)."""
        if self._subagent is None and self.settings.memory.providers:
            self.runtime.memory_providers.publish(self._session_id, event)

    def tool_finished(self, call: ToolCall, result: ToolResult) -> None:
        """A call of this session's turn finished: what it changed beyond its result (a write to the
        built-in memory) is published."""
        for effect in result.effects:
            self.publish(effect)

    # -- usage and spend

    async def account(self, model: str, usage: Usage, model_calls: int) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.runtime.record_usage, self._session_id, model, usage, model_calls)

    async def report_usage(self, state: SessionState) -> None:
        """Context used against the window (the same figure after any turn, cancelled or not, and
        after a reload), and the session's cost so far, its subagents' included."""
        model = state.choices.model
        cost = None
        if price_of(model, self.settings) is not None:
            cost = (await anyio.to_thread.run_sync(self.recorded_spend)).usd
        await self.sink.emit(UsageReported(used=state.context_tokens(), size=context_window(model, self.settings),
                                           cost_usd=cost))

    def recorded_spend(self) -> Spend:
        """What the SessionDB has recorded of this session and its subagents (blocking)."""
        from acp_hermes.core.budget import Spend

        db = self.db
        record = db.get_session(self._session_id)
        children = db.subagent_totals(self._session_id)
        own = Spend() if record is None else Spend(record.estimated_cost_usd, record.input_tokens + record.output_tokens
                                                    + record.cache_read_tokens + record.cache_write_tokens)
        return own + Spend(children.cost_usd, children.tokens)

    async def refresh_spend(self) -> None:
        """Set the budget's meter from the SessionDB (between turns: what reviews and titles cost too)."""
        self.budget.resync(await anyio.to_thread.run_sync(self.recorded_spend))

    def spent(self, model: str, usage: Usage) -> None:
        """A model call of this session's turn completed: its cost counts toward the budget now."""
        from acp_hermes.core.budget import Spend, tokens_of

        self.budget.add(Spend(self.runtime.cost_of(model, usage), tokens_of(usage)))

    # -- the end

    def close(self) -> None:
        """Stop what runs beside the session: MCP servers, background commands, reviews."""
        self.closed = True
        if self.mcp is not None:
            self.mcp.stop()
        self.tools.state.close()  # background commands end with the session
        if self.tools.sandbox is not None:
            self.tools.sandbox.discard()
        for scope in list(self.reviews):
            scope.cancel()


def build_services(runtime: Runtime, state: SessionState, *, sink: EventSink, asker: Asker, editor: Editor,
                   spawn: Spawn, children: ChildMaker, on_first_exchange: Callable[[], None],
                   rebuild_prompt: Callable[[], str], trust: WorkspaceTrust,
                   checkpoints: SessionCheckpoints | None = None, budget: Budget | None = None) -> SessionServices:
    """A session's services, complete (``checkpoints`` and ``budget``: its parent's, for a child; ``trust``:
    whether its workspace may speak, as the manager read it)."""
    from acp_hermes.core.budget import Budget
    from acp_hermes.core.checkpoints import SessionCheckpoints  # sessions only: kept off start-up
    from acp_hermes.core.hints import SubdirectoryHintTracker
    from acp_hermes.core.hooks import build_session_hooks
    from acp_hermes.core.job_notices import JobNotices
    from acp_hermes.core.quotas import Quotas
    from acp_hermes.core.review import Nudges
    from acp_hermes.core.runtime import SessionAuxiliary
    from acp_hermes.core.web import WebTools
    from acp_hermes.permissions.gate import PermissionGate
    from acp_hermes_tools.contracts import ToolServices
    from acp_hermes_tools.sandbox import SessionSandbox, hidden_paths
    from acp_hermes_tools.secret_links import SecretLinks

    settings, session_id, cwd, subagent = trust.settings, state.id, state.cwd, state.subagent
    notify = _notifier(session_id, sink, spawn)
    store = (lambda: runtime.checkpoints_for(cwd)) if settings.checkpoints.enabled else None
    skills = runtime.skills_for(cwd, trust.trusted)  # a project's own skills only in a trusted workspace
    history = skills.history  # where it stands: each checkpoint keeps it, so skills roll back too
    budget = budget or Budget(lambda: runtime.settings.budget, state.choices.budget,
                              _notifier(session_id, sink, spawn, "budget"))
    quotas = Quotas(budget, sink)
    checkpoints = checkpoints or SessionCheckpoints(session_id, store, notify,
                                                    None if history is None else history.mark)
    auxiliary = SessionAuxiliary(runtime, session_id)
    roots = (cwd, *state.additional_directories)
    tools = ToolScope(
        session_id=session_id,
        cwd=cwd,
        roots=roots,
        services=ToolServices(memory=runtime.memory, sessions=runtime.db, auxiliary=auxiliary,
                              skills=skills, secrets=runtime.settings.secrets),
        sandbox=SessionSandbox(  # the user's settings only: a project never sets the sandbox
            enabled=runtime.settings.sandbox != "off",
            writable=roots,
            hidden=hidden_paths(Path.home(), runtime.paths.home),
            network_allowed=runtime.settings.sandbox_network,
            session_id=session_id,
            quarantine=runtime.paths.quarantine,
            extra_environment=tuple(runtime.settings.sandbox_env),
        ),
        secret_links=SecretLinks(Path.home(), runtime.paths.home),
        before_change=checkpoints.before_change,
    )
    learning = settings.learning_loop and subagent is None  # a child's conversation is its parent's business
    gate = PermissionGate(asker=asker, mode=state.choices.mode, home=Path.home(), hermes_home=runtime.paths.home,
                          project=cwd, store=runtime.grants,
                          session_grants=subagent.grants if subagent is not None else None)
    gate.shared_commands = trust.shared_commands  # a trusted project's grants: in the sandbox only
    services = SessionServices(
        runtime=runtime, session_id=session_id, subagent=subagent, sink=sink, editor=editor, gate=gate,
        tools=tools, checkpoints=checkpoints,
        budget=budget, quotas=quotas,
        web=WebTools(lambda: trust.settings.web), auxiliary=auxiliary,
        hints=SubdirectoryHintTracker(cwd, state.additional_directories, enabled=trust.trusted),
        job_notices=JobNotices(tools, sink, lambda: state.transcript, spawn),
        nudges=Nudges(settings.memory_nudge_interval if learning else 0,
                      settings.skill_nudge_interval if learning else 0),
        spawn=spawn, children=children, on_first_exchange=on_first_exchange, rebuild_prompt=rebuild_prompt,
        trust=trust,
        hooks=lambda made: build_session_hooks(runtime, state, made.gate, _notifier(session_id, sink, spawn, "hook"),
                                               made.tool_context,
                                               lambda: made.registry, lambda: made.trust.trusted),
    )
    return services


def _notifier(session_id: str, sink: EventSink, spawn: Spawn, kind: NoticeKind = "info") -> Callable[[str], None]:
    """Tells the user a message now, as a notice of ``kind`` (``core.notices``)."""

    def notify(text: str) -> None:
        from acp_hermes.core.notices import notice

        log.warning("session %s: %s", session_id, text)
        spawn(sink.emit(notice(kind, text)))

    return notify
