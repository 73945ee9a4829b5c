"""One session: its cwd, choices (mode, model, thinking), frozen system prompt, history and running turn.

A ``Session`` is complete when it is constructed: ``core.sessions.SessionManager`` (the only code
that builds one) passes in everything it reaches outside itself — its event sink, permission asker
and editor, how it starts background work (``spawn``), what it does once its first exchange is done
(``on_first_exchange``: name it) and how compaction rebuilds its system prompt (``rebuild_prompt``).
Nothing is assigned afterwards.

Prompts are serialised per session: one that arrives while a turn runs waits and runs next (in
arrival order); ``cancel`` stops the running turn and every prompt queued before it, which all
end ``cancelled``. What a prompt is (a slash command, a skill, a model turn) is decided by
``core.commands.handle``; ``prompt`` runs a model turn.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_hermes.config import Settings
from acp_hermes.core.choices import MODE_OPTION, SessionChoices, apply_choice
from acp_hermes.core.events import Event, EventSink, UsageReported
from acp_hermes.core.hints import SubdirectoryHintTracker
from acp_hermes.core.runtime import Runtime, SessionAuxiliary
from acp_hermes.core.transcript import Transcript, final_answer
from acp_hermes.model.pricing import context_window, price_of
from acp_hermes.model.types import Usage
from acp_hermes.permissions.gate import Asker, PermissionGate
from acp_hermes.permissions.modes import Mode
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import Editor, ToolEventSink, ToolServices

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from acp_hermes.core.budget import Budget, Spend
    from acp_hermes.core.checkpoints import SessionCheckpoints
    from acp_hermes.core.compactor import Compaction, CompactionTarget
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.core.loop import StopReason, TurnResult, TurnSettings
    from acp_hermes.core.memory_providers import MemoryProviders
    from acp_hermes.core.review import Proposal
    from acp_hermes.core.steering import Steer
    from acp_hermes.core.turn_input import Note
    from acp_hermes.core.user_prompt import PromptPart
    from acp_hermes_memory.session_db import SessionDB
    from acp_hermes_tools.checkpoints import CheckpointStore
    from acp_hermes_tools.mcp.connection import McpConnection
    from acp_hermes_tools.mcp.servers import McpServers
    from acp_hermes_tools.mcp.specs import McpServerSpec
    from acp_hermes_tools.registry import Tool, ToolCall, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

MCP_TURN_WAIT_SECONDS = 10.0  # how long a turn waits for MCP servers still connecting before it starts without them


class ChildMaker(Protocol):
    """How a session makes and ends its children, and its ``delegate_task`` tool that runs them
    (``core.sessions.SessionManager``, with ``core.delegation``)."""

    async def create_child(self, parent: Session, child_id: str, spec: SubagentSpec, sink: EventSink,
                           asker: Asker) -> Session: ...

    async def end_child(self, child_id: str) -> None: ...

    def delegate_tool(self, parent: Session) -> Tool: ...


class Session:
    """One session of one client: its state, its conversation and its running turn."""

    def __init__(
        self,
        *,
        session_id: str,
        cwd: Path,
        additional_directories: tuple[Path, ...],
        choices: SessionChoices,
        system_prompt: str,
        transcript: Transcript,
        runtime: Runtime,
        editor: Editor,
        sink: EventSink,
        asker: Asker,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        on_first_exchange: Callable[[Session], None],
        rebuild_prompt: Callable[[], str],
        title: str | None = None,
        children: ChildMaker,
        parent_id: str | None = None,
        subagent: SubagentSpec | None = None,
        stored_tool_results: Sequence[tuple[str, Any]] = (),
        context: tuple[int, int] = (0, 0),
        checkpoints: SessionCheckpoints | None = None,
        budget: Budget | None = None,
    ) -> None:
        from acp_hermes.core.budget import Budget
        from acp_hermes.core.checkpoints import SessionCheckpoints  # sessions only: kept off start-up
        from acp_hermes.core.job_notices import JobNotices
        from acp_hermes.core.review import Nudges
        from acp_hermes.core.steering import Steering
        from acp_hermes.core.web import WebTools
        from acp_hermes_tools.sandbox import SessionSandbox, hidden_paths
        from acp_hermes_tools.secret_links import SecretLinks

        self.id = session_id
        self.parent_id = parent_id  # the session that started this one (a subagent's parent), if any
        self.subagent = subagent  # what makes this session a delegated task's child, if it is one
        self.depth = subagent.depth if subagent is not None else 0
        # How it makes and ends its own children (delegate_task), and those running now: its cancel is theirs.
        self.children_maker = children
        self.children: dict[str, Session] = {}
        self.last_turn: TurnResult | None = None  # what the last turn came to (a child's outcome is read from it)
        self.cwd = cwd
        self.additional_directories = additional_directories
        self.choices = choices
        self.system_prompt = system_prompt
        self.transcript = transcript
        self.title = title
        # The context the last model call measured (or a compaction or a reload estimated), and how
        # many transcript messages it covers: later ones are estimated (``context_tokens``).
        self.last_context_tokens, self.measured_messages = context
        self._runtime = runtime
        self._sink = sink
        self.editor = editor
        self.auxiliary = SessionAuxiliary(runtime, session_id)
        self.gate = PermissionGate(
            asker=asker,
            mode=choices.mode,
            home=Path.home(),
            hermes_home=runtime.paths.home,
            project=cwd,
            store=runtime.grants,
            session_grants=subagent.grants if subagent is not None else None,
        )
        # A child's are its parent's: the parent's turn is what a rollback undoes.
        self.checkpoints = checkpoints or SessionCheckpoints(
            session_id, self._checkpoint_store(runtime, cwd), self._notify)
        # A child's is its parent's too: what it spends counts there, and the parent's limits stop it.
        self.budget = budget or Budget(lambda: runtime.settings.budget, choices.budget, self._notify)
        self.steering = Steering()  # what the user sends into the running turn (steer)
        self._steer_order = anyio.Lock()
        self.web = WebTools(lambda: runtime.settings.web)  # the API's web search and fetch, while it takes them
        roots = (cwd, *additional_directories)
        self.tools = ToolScope(
            session_id=session_id,
            cwd=cwd,
            roots=roots,
            services=ToolServices(memory=runtime.memory, sessions=runtime.db, auxiliary=self.auxiliary,
                                  skills=runtime.skills_for(cwd), secrets=runtime.settings.secrets),
            sandbox=SessionSandbox(
                enabled=runtime.settings.sandbox != "off",
                writable=roots,
                hidden=hidden_paths(Path.home(), runtime.paths.home),
                network_allowed=runtime.settings.sandbox_network,
                session_id=session_id,
                quarantine=runtime.paths.quarantine,
                extra_environment=tuple(runtime.settings.sandbox_env),
            ),
            secret_links=SecretLinks(Path.home(), runtime.paths.home),
            before_change=self.checkpoints.before_change,
        )
        self._hints = SubdirectoryHintTracker(cwd, additional_directories)
        # (tool name, raw output) of the calls a restored session had completed: its tools get their
        # state back from them when the first turn has loaded the tools anyway.
        self.stored_tool_results: list[tuple[str, Any]] = list(stored_tool_results)
        self._turn_lock: anyio.Lock | None = None  # made by the first prompt: session/new need not load anyio's backend
        self._cancel_epoch = 0
        self._scope: anyio.CancelScope | None = None
        self.closed = False
        # Called once, after the first turn that completes while the session has no title.
        self._on_first_exchange = on_first_exchange
        # A fresh system prompt for this session (memory, context files as they are now): compaction only.
        self._rebuild_prompt = rebuild_prompt
        # Runs a background job beside the session: the learning loop's reviews, MCP servers, notices.
        self._spawn = spawn
        # Who hears of a background job's end, and when: the model (in a turn) or the user (idle).
        self._job_notices = JobNotices(self.tools, sink, lambda: self.transcript, spawn)
        settings = runtime.settings
        learning = settings.learning_loop and subagent is None  # a child's conversation is its parent's business
        self.nudges = Nudges(settings.memory_nudge_interval if learning else 0,
                             settings.skill_nudge_interval if learning else 0)
        self.proposals: list[Proposal] = []  # review writes held for the user's approval (default mode)
        self._reviews: set[anyio.CancelScope] = set()  # running background reviews: cancelled with the session
        self._naming_started = False
        self._notes: list[Note] = []  # for the model's next turn (note_for_model)
        self.mcp: McpServers | None = None  # this session's MCP servers (connect_mcp)
        self._mcp_registry: tuple[int, ToolRegistry] | None = None  # the registry with their tools, by version
        self._own_registry: ToolRegistry | None = None  # the runtime's tools as this session has them
        self._provider_tools_added = False  # the external memory provider's tools are in _own_registry
        self._provider_turns = 0  # turns the memory provider was told of (on_turn_start's number)

    @staticmethod
    def _checkpoint_store(runtime: Runtime, cwd: Path) -> Callable[[], CheckpointStore] | None:
        """How the session's checkpoint store opens; None when checkpoints are off."""
        if not runtime.settings.checkpoints.enabled:
            return None
        return lambda: runtime.checkpoints_for(cwd)

    @property
    def roots(self) -> tuple[Path, ...]:
        return self.tools.roots

    @property
    def settings(self) -> Settings:
        return self._runtime.settings

    @property
    def db(self) -> SessionDB:
        return self._runtime.db

    @property
    def max_iterations(self) -> int:
        """Model calls a turn may make."""
        return self.subagent.max_iterations if self.subagent is not None else self._runtime.settings.max_iterations

    @property
    def cancel_epoch(self) -> int:
        """Counts this session's cancels (and its close): a change means "stop what you started"."""
        return self._cancel_epoch

    def set_choice(self, option_id: str, value: Any) -> None:
        apply_choice(self.choices, self._runtime.settings, option_id, value)
        self.gate.mode = self.choices.mode
        self._persist_choices()
        if option_id == MODE_OPTION:  # a mode switched mid-delegation holds for the running children too
            for child in list(self.children.values()):
                child.set_choice(option_id, value)

    def _persist_choices(self) -> None:
        self._runtime.db.update_session(
            self.id, mode=self.choices.mode.value, model=self.choices.model, model_config=self.choices.as_config()
        )

    # -- MCP servers

    def connect_mcp(self, from_editor: Sequence[McpServerSpec]) -> None:
        """Start the configured MCP servers and the editor's (which win a shared name), in the background.

        Nothing here waits for a server. A config entry that cannot be used is told to the user like a
        server that fails. The manager calls this as it opens the session.
        """
        settings = self._runtime.settings
        if not settings.mcp_servers and not from_editor:
            return
        from acp_hermes_tools.mcp.servers import McpServers
        from acp_hermes_tools.mcp.specs import merged, parse_configured

        configured, problems = parse_configured(settings.mcp_servers)
        for problem in problems:
            self._notify(f"⚠️ Ignoring an MCP server in the config: {problem}")
        specs = merged(configured, from_editor)
        if not specs:
            return
        self.mcp = McpServers(specs, self.cwd, on_change=self._mcp_changed)
        self.mcp.start(self._spawn)
        log.info("session %s: connecting %d MCP server(s)", self.id, len(specs))

    def _mcp_changed(self, connection: McpConnection) -> None:
        if connection.status == "failed" and not self.closed:
            what = "stopped working" if connection.tools else "could not be connected"
            self._notify(f"⚠️ MCP server `{connection.name}` {what}: {connection.detail}. "
                         "The session goes on without its tools; `/mcp` shows every server.")

    def _notify(self, text: str) -> None:
        """Tell the user ``text`` now, outside any turn (a server's failure)."""
        import uuid

        from acp_hermes.core.events import AgentText

        log.warning("session %s: %s", self.id, text)
        self._spawn(self._sink.emit(AgentText(f"notice-{uuid.uuid4()}", text + "\n\n")))

    def base_tool_names(self) -> list[str]:
        """The built-in tools, of which a child's toolsets pick."""
        return self._runtime.registry.names

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
        from acp_hermes.core.lineage import DELEGATE_TOOL_NAME

        tools = self._runtime.registry
        may_delegate = self.settings.delegation.enabled
        if self.subagent is not None:
            tools, may_delegate = tools.only(self.subagent.tool_names), DELEGATE_TOOL_NAME in self.subagent.tool_names
        if self._provider_tools_added:  # an external memory provider's tools, for the user's own sessions
            tools = tools.extended(self._runtime.memory_providers.tools())
        return tools.extended([self.children_maker.delegate_tool(self)]) if may_delegate else tools

    def _tool_context(self, call_id: str, title: str, sink: ToolEventSink) -> ToolContext:
        return ToolContext(call_id=call_id, scope=self.tools, editor=self.editor, gate=self.gate, sink=sink,
                           title=title)

    def tool_context(self, call_id: str, title: str) -> ToolContext:
        """The checked doors of a call the session makes itself (an export, a rollback)."""
        return self._tool_context(call_id, title, self._sink)

    def note_for_model(self, note: Note) -> None:
        """Tell the model ``note`` at the start of its next turn (what changed under it meanwhile)."""
        self._notes.append(note)

    # -- rewinding the conversation

    async def can_rewind_to(self, prompt_row: int) -> bool:
        """Whether the conversation can go back to just before the prompt stored as ``prompt_row``: it is
        a turn's prompt in the current segment (a compaction since then summarised it away)."""
        rows = await anyio.to_thread.run_sync(self.db.messages, self.transcript.session_id)
        from acp_hermes.core.transcript import is_steer

        return any(row.id == prompt_row and row.role == "user" and row.payload and not is_steer(row) for row in rows)

    async def rewind_conversation(self, prompt_row: int) -> int:
        """Rewind the model's history to just before the prompt stored as ``prompt_row``; the later
        messages are set aside as an ended segment (found by search, not replayed). How many moved."""
        from acp_hermes.core.transcript import history_from_rows, newest_row, restored_context

        segment = self.transcript.session_id
        db = self.db

        def rewind() -> tuple[int, list[Any]]:
            before = len(db.messages(segment))
            db.rewind(segment, prompt_row)
            rows = db.messages(segment)
            return before - len(rows), rows

        with anyio.CancelScope(shield=True):
            moved, rows = await anyio.to_thread.run_sync(rewind)
        history = history_from_rows(rows)
        self.transcript = Transcript(segment, db, history, synced_to=newest_row(rows))
        self.last_context_tokens, self.measured_messages = restored_context(
            self.system_prompt, rows, len(history), carried=segment != self.id)
        log.info("session %s: conversation rewound before message %d (%d set aside)", self.id, prompt_row, moved)
        return moved

    def _turn_settings(self) -> TurnSettings:
        from acp_hermes.core.loop import TurnSettings

        settings = self._runtime.settings
        level = self.choices.thought_level
        return TurnSettings(
            model=self.choices.model,
            max_tokens=settings.max_output_tokens,
            thinking_budget=None if level == "off" else settings.thinking_budgets.get(level),
            max_iterations=self.max_iterations,
            cache_ttl=settings.cache_ttl,
        )

    async def prompt(self, parts: Sequence[PromptPart], client_message_id: str | None = None) -> StopReason:
        """Run one prompt to its end; queued behind a running turn if there is one. ``client_message_id``:
        the client's id for it, stored with it (rewind points name it)."""
        epoch = self._cancel_epoch
        if self._turn_lock is None:
            self._turn_lock = anyio.Lock()
        async with self._turn_lock:
            if epoch != self._cancel_epoch or self.closed:
                return "cancelled"
            if self.subagent is None:  # a child lives in this process only
                await self._catch_up()
            self.transcript.client_message_id = client_message_id
            if self.subagent is None:  # a child's turn is part of its parent's, whose budget it spends
                self.budget.start_turn(await anyio.to_thread.run_sync(self._recorded_spend))
                refusal = self.budget.refusal()
                if refusal is not None:
                    await self._refuse(parts, refusal)
                    return "end_turn"
                self.steering.open()  # from now on a steer reaches this turn (its first request, at the latest)
            try:
                return await self._run(parts)
            finally:  # the loop closes it as it ends; this is for a turn that broke before its loop ran
                self._carry_undelivered(self.steering.close())

    async def _refuse(self, parts: Sequence[PromptPart], reason: str) -> None:
        """Answer a prompt without running it (the budget is spent): shown, stored for replay, never
        part of the model's history."""
        import uuid

        from acp_hermes.core.events import AgentText
        from acp_hermes.core.user_prompt import command_text

        message_id = str(uuid.uuid4())
        await self.transcript.add_local_prompt(command_text(parts) or "", parts)
        await self.transcript.add_local_reply(reason, message_id=message_id)
        await self._sink.emit(AgentText(message_id, reason))

    async def steer(self, parts: Sequence[PromptPart], client_message_id: str | None = None) -> bool:
        """Send ``parts`` into the running turn: the model reads them at its next request. False when no
        model turn runs (nothing was taken: the caller decides whether to start one)."""
        from acp_hermes.core.attachments import convert_prompt
        from acp_hermes.core.steering import Steer
        from acp_hermes.core.turn_input import steer_blocks

        if not self.steering.accepting:
            return False
        async with self._steer_order:  # converted one at a time, so steers arrive in the order they were sent
            converted = await anyio.to_thread.run_sync(convert_prompt, parts, self.cwd)
            content = steer_blocks(converted.content)
            return self.steering.offer(Steer(content, converted.plain_text, tuple(parts), client_message_id))

    async def _run(self, parts: Sequence[PromptPart]) -> StopReason:
        # Only turns need these; the adapter warms them up right after session/new.
        from acp_hermes.core.attachments import attached_paths, convert_prompt
        from acp_hermes.core.loop import AgentLoop, TurnControls
        from acp_hermes.core.turn_input import Hint, PlanMode, Recall, TurnInput

        own_turn = self.subagent is None  # a child's changes belong to its parent's turn (and checkpoint)
        providers = await self._memory_providers() if own_turn else None
        if self.mcp is not None and self.mcp.connecting:
            await self.mcp.wait_connecting(MCP_TURN_WAIT_SECONDS)
        registry = self.registry
        if self.stored_tool_results:
            registry.restore_state(self.tools, self.stored_tool_results)
            self.stored_tool_results = []
        converted = await anyio.to_thread.run_sync(convert_prompt, parts, self.cwd)
        notes: list[Note] = []
        attached = attached_paths(parts, self.cwd)
        hint = await anyio.to_thread.run_sync(self._hints.check_paths, attached) if attached else ""
        if hint.strip():  # attached files count as touched, like the paths of tool calls
            notes.append(Hint(hint.strip()))
        if self.choices.mode is Mode.PLAN:
            notes.append(PlanMode())
        notes.extend(self._job_notices.turn_started())  # jobs that ended since the last turn
        notes.extend(self._notes)  # e.g. files rolled back
        self._notes.clear()
        if providers is not None:  # recall for this message: in it, fenced; never in the system prompt
            self._provider_turns += 1
            recall = await providers.recall(self.id, self.cwd, self._provider_turns, converted.plain_text, self._notify)
            if recall:
                notes.append(Recall(recall))
        content = TurnInput.opening(converted.content, notes)
        if self._compaction_due(self.context_tokens()):
            await self._compact()
        if self.proposals:
            from acp_hermes.core.review import offer_proposals

            await offer_proposals(self.proposals, registry=registry, sink=self._sink, transcript=self.transcript,
                                  make_context=self._tool_context)
        loop = AgentLoop(
            provider=self._runtime.provider,
            registry=registry,
            sink=self._sink,
            transcript=self.transcript,
            system_prompt=self.system_prompt,
            make_context=self._tool_context,
            scope=self.tools,
            notes=TurnInput(hints=self._hints, jobs=self._job_notices.ended),
            compact_if_due=self._compact_between_calls,
            controls=TurnControls(steering=self.steering if own_turn else None,
                                  stop_before_request=self.budget.exceeded, spent=self._spent,
                                  passed_at_end=self.budget.passed if own_turn else None,
                                  web=self.web if own_turn else None, scrub_fences=providers is not None,
                                  tool_finished=self._tool_finished if providers is not None else None),
        )
        stop: StopReason = "cancelled"
        if own_turn:
            self.checkpoints.begin(converted.plain_text, lambda: self.transcript.last_prompt_row)
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                stop = (await loop.run_turn(content, converted.plain_text, parts, self._turn_settings())).stop_reason
            finally:
                self._scope = None
                self._carry_undelivered(self.steering.close())  # a steer from now on starts a turn of its own
                if own_turn:
                    with anyio.CancelScope(shield=True):  # a cancelled turn's changes are the agent's all the same
                        await self.checkpoints.end()
        result = loop.result  # also what a cancelled turn used before it stopped
        self.last_turn = result
        self._notes.extend(loop.notes.left_over())  # a flagged web result's warning: with the next prompt
        if result.model_calls:
            await self._account(result.usage, result.model_calls)
        if result.context_tokens:  # measured after any compaction of this turn; a cancelled call measured nothing
            self.last_context_tokens, self.measured_messages = result.context_tokens, result.measured_messages
        await self.report_usage()
        await self._job_notices.turn_ended()
        if providers is not None and stop != "cancelled":
            providers.turn_ended(self.id, converted.plain_text, final_answer(self.transcript.messages))
        if stop != "cancelled" and not self.title and not self._naming_started:
            self._naming_started = True
            self._on_first_exchange(self)
        if stop != "cancelled":
            self._nudge(result.tools_used, max(0, result.model_calls - 1))
        log.info("session %s: turn ended (%s)", self.id, stop)
        return stop

    async def _memory_providers(self) -> MemoryProviders | None:
        """The external memory provider's manager when one is configured (loaded off the event loop,
        with its tools, which join this session's registry)."""
        if not self.settings.memory.providers:
            return None
        runtime = self._runtime

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
        runtime = self._runtime
        return await anyio.to_thread.run_sync(lambda: runtime.memory_providers.summary())

    def memory_hook(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Tell the external memory provider, if one is configured, what happened (in the background)."""
        if self.subagent is None and self.settings.memory.providers:
            self._runtime.memory_providers.hook(self.id, name, *args, **kwargs)

    def _hook_with_history(self, name: str) -> None:
        """``memory_hook`` with the conversation, in the form the provider's plugin API knows (the API's)."""
        if self.subagent is None and self.settings.memory.providers:
            from acp_hermes.model.provider import messages_to_wire

            self._runtime.memory_providers.hook(self.id, name, messages_to_wire(self.transcript.messages))

    def _tool_finished(self, call: ToolCall, result: ToolResult) -> None:
        """A call of this session's turn finished: a change to the built-in memory reaches the provider."""
        args = call.arguments or {}
        if call.name == "memory" and result.ok and args.get("action") in ("add", "replace", "remove"):
            self.memory_hook("on_memory_write", str(args["action"]), str(args.get("target") or "memory"),
                             str(args.get("content") or args.get("old_text") or ""))

    def _carry_undelivered(self, steers: Sequence[Steer]) -> None:
        """Steers a turn that stopped early never read go to the model with the next prompt."""
        from acp_hermes.core.turn_input import UndeliveredSteer
        from acp_hermes_memory.text import one_line

        for steer in steers:
            self.note_for_model(UndeliveredSteer(steer.plain_text))
            self._notify(f"Your message “{one_line(steer.plain_text, 80)}” arrived as the turn stopped; it goes "
                         "to the model with your next prompt.")

    async def export(self, path: Path, text: str) -> str:
        """Write ``text`` to ``path`` as a tool call the editor sees, asking as any edit does."""
        import uuid

        from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
        from acp_hermes_tools.contracts import DiffDisplay, FileChange, Location, PermissionDenied, TextDisplay

        call_id = f"export-{uuid.uuid4()}"
        title = f"Export the conversation to {path.name}"
        await self._sink.emit(ToolCallStarted(call_id, "export", title, "edit", {"path": str(path)},
                                              (Location(str(path)),)))
        ctx = self._tool_context(call_id, title, self._sink)
        old = await anyio.to_thread.run_sync(lambda: path.read_text(encoding="utf-8") if path.is_file() else None)
        try:
            await ctx.authorize_edits([FileChange(path, old, text)])
            await ctx.write_text(path, text)
        except PermissionDenied as refused:  # the user reads their own words, not the model's
            await self._sink.emit(ToolCallFinished(call_id, "failed", (TextDisplay(refused.shown),)))
            return refused.shown
        await self._sink.emit(ToolCallFinished(call_id, "completed", (DiffDisplay(str(path), old, text),)))
        return f"Exported the conversation to `{path}`."

    # -- the learning loop

    def _nudge(self, tools_used: set[str], tool_calls: int) -> None:
        memory, skills = self.nudges.after_turn(tools_used, tool_calls)
        if memory or skills:
            self._spawn(self._review(memory=memory, skills=skills))

    async def _review(self, *, memory: bool, skills: bool) -> None:
        """A background review of the conversation as it is now (see ``core.review``)."""
        from acp_hermes.core.review import ReviewTarget, review

        target = ReviewTarget(
            messages=list(self.transcript.messages), system_prompt=self.system_prompt,
            settings=self._turn_settings(), provider=self._runtime.provider, registry=self._runtime.registry,
            scope=self.tools, editor=self.editor, gate=self.gate, sink=self._sink, transcript=self.transcript,
            proposals=self.proposals,
        )
        scope = anyio.CancelScope()
        self._reviews.add(scope)
        try:
            with scope:
                usage, calls = await review(target, memory=memory, skills=skills)
        except Exception:  # a review must never take the session down
            log.exception("session %s: background review failed", self.id)
            return
        finally:
            self._reviews.discard(scope)
        if scope.cancelled_caught:
            return
        if calls:
            await anyio.to_thread.run_sync(self._runtime.record_usage, self.id, self.choices.model, usage, calls)

    # -- compaction

    async def compact(self, focus: str | None = None) -> Compaction:
        """``/compact``: compact now (after a running turn), whatever the context's size."""
        if self._turn_lock is None:
            self._turn_lock = anyio.Lock()
        async with self._turn_lock:
            await self._catch_up()
            compaction = await self._compact(focus, manual=True)
        await self.report_usage()
        return compaction

    async def _catch_up(self) -> None:
        """Go on from the conversation as stored when another process changed it since this one read it
        (an editor window of its own on this session compacted it or added to it), so the model's next
        request loses nothing either stored. One small read when nothing changed."""
        from acp_hermes.core.transcript import stored_conversation

        transcript = self.transcript
        news = await anyio.to_thread.run_sync(self.db.segment_news, transcript.session_id, transcript.synced_to)
        if transcript.in_step(news):
            return
        stored = await anyio.to_thread.run_sync(stored_conversation, self.db, self.id)
        if stored is None:
            return
        self.transcript, self.system_prompt = stored.transcript, stored.system_prompt
        self.last_context_tokens, self.measured_messages = stored.context
        log.info("session %s: changed in another process; going on from what is stored (segment %s, %d messages)",
                 self.id, self.transcript.session_id, len(self.transcript.messages))

    def _compaction_due(self, context_tokens: int) -> bool:
        from acp_hermes.core.compression import should_compress

        settings = self._runtime.settings
        window = context_window(self.choices.model, settings)
        return settings.compression and should_compress(context_tokens, window, settings.compression_threshold)

    async def _compact_between_calls(self, context_tokens: int) -> tuple[Transcript, str] | None:
        """The loop's hook after a round of tool results: the new history and prompt, if compacted."""
        if not self._compaction_due(context_tokens):
            return None
        return (self.transcript, self.system_prompt) if (await self._compact()).done else None

    async def _compact(self, focus: str | None = None, *, manual: bool = False) -> Compaction:
        from acp_hermes.core.compactor import compact

        target = self._compaction_target()
        self._hook_with_history("on_pre_compress")
        compaction = await compact(target, focus=focus, manual=manual)
        if compaction.done:
            self.transcript, self.system_prompt = target.transcript, target.system_prompt
            self.last_context_tokens, self.measured_messages = compaction.after_tokens, len(self.transcript.messages)
        return compaction

    def _compaction_target(self) -> CompactionTarget:
        from acp_hermes.core.compactor import CompactionTarget

        settings = self._runtime.settings
        return CompactionTarget(
            root_id=self.id, transcript=self.transcript, system_prompt=self.system_prompt,
            model=self.choices.model, window=context_window(self.choices.model, settings),
            threshold=settings.compression_threshold, sink=self._sink, provider=self._runtime.provider,
            registry=self._runtime.registry, scope=self.tools, auxiliary=self.auxiliary, db=self._runtime.db,
            make_context=self._tool_context, rebuild_prompt=self._rebuild_prompt, flush=settings.memory_flush,
        )

    async def _account(self, usage: Usage, model_calls: int) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                self._runtime.record_usage, self.id, self.choices.model, usage, model_calls
            )

    def context_tokens(self) -> int:
        """The size of the context the next request sends, as far as it is known: what the last model
        call measured, plus an estimate of the messages stored since (a cancelled or failed turn's
        prompt and partial answer, results of calls cut short)."""
        unmeasured = self.transcript.messages[self.measured_messages:]
        if not unmeasured:
            return self.last_context_tokens
        from acp_hermes.core.compression import estimate_tokens

        return self.last_context_tokens + estimate_tokens(unmeasured)

    async def report_usage(self) -> None:
        """Context used against the window (the same figure after any turn, cancelled or not, and
        after a reload), and the session's cost so far, its subagents' included."""
        settings = self._runtime.settings
        cost = None
        if price_of(self.choices.model, settings) is not None:
            cost = await anyio.to_thread.run_sync(self._cost_so_far)
        await self._sink.emit(
            UsageReported(
                used=self.context_tokens(),
                size=context_window(self.choices.model, settings),
                cost_usd=cost,
            )
        )

    def _cost_so_far(self) -> float:
        return self._recorded_spend().usd

    def _recorded_spend(self) -> Spend:
        """What the SessionDB has recorded of this session and its subagents (blocking)."""
        from acp_hermes.core.budget import Spend

        db = self._runtime.db
        record = db.get_session(self.id)
        children = db.subagent_totals(self.id)
        own = Spend() if record is None else Spend(record.estimated_cost_usd, record.input_tokens + record.output_tokens
                                                    + record.cache_read_tokens + record.cache_write_tokens)
        return own + Spend(children.cost_usd, children.tokens)

    async def refresh_spend(self) -> None:
        """Set the budget's meter from the SessionDB (between turns: what reviews and titles cost too)."""
        self.budget.resync(await anyio.to_thread.run_sync(self._recorded_spend))

    def _spent(self, usage: Usage) -> None:
        """A model call of this session's turn completed: its cost counts toward the budget now."""
        from acp_hermes.core.budget import Spend, tokens_of

        self.budget.add(Spend(self._runtime.cost_of(self.choices.model, usage), tokens_of(usage)))

    def set_budget(self, name: str, value: float | None, *, reset: bool = False) -> None:
        """``/budget``: this session's own limit ``name`` (None: no limit); ``reset``: the config's again."""
        if reset:
            self.choices.budget.clear()
        else:
            self.choices.budget[name] = value
        self._persist_choices()

    async def emit(self, event: Event) -> None:
        await self._sink.emit(event)

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """Hold the session between turns: a rollback waits for the running turn and keeps the next waiting."""
        if self._turn_lock is None:
            self._turn_lock = anyio.Lock()
        async with self._turn_lock:
            yield

    @property
    def busy(self) -> bool:
        """A turn runs (or a rollback holds the session)."""
        return self._turn_lock is not None and self._turn_lock.locked()

    async def wait_until_idle(self) -> None:
        """Return once no turn runs (a cancelled one has finished storing what it had)."""
        if self._turn_lock is not None:
            async with self._turn_lock:
                pass

    def cancel(self) -> None:
        """Stop the running turn, its children and every prompt queued before now; idle → nothing happens."""
        self._cancel_epoch += 1
        for child in list(self.children.values()):
            child.cancel()
        if self._scope is not None:
            self._scope.cancel()

    def close(self) -> None:
        self.closed = True
        self._hook_with_history("on_session_end")
        if self.mcp is not None:
            self.mcp.stop()
        self.tools.state.close()  # background commands end with the session
        if self.tools.sandbox is not None:
            self.tools.sandbox.discard()
        for scope in list(self._reviews):
            scope.cancel()
        self.cancel()
