"""Sessions: one per ACP session, and the manager that creates, restores and retires them.

A ``Session`` owns its cwd, choices (mode, model, thinking), frozen system prompt, history
and the running turn. Prompts are serialised per session: one that arrives while a turn runs
waits and runs next (in arrival order); ``session/cancel`` stops the running turn and every
prompt queued before it, which all return ``cancelled``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.config import Paths, Settings
from acp_hermes.editor import ClientAbilities, ClientEditor, Requester
from acp_hermes.events import Event, EventSink, UsageReported
from acp_hermes.hints import SubdirectoryHintTracker
from acp_hermes.options import SessionChoices, apply_choice, parse_mode
from acp_hermes.permissions import Asker, Mode, PermissionGate, ProjectGrants
from acp_hermes.pricing import Usage, context_window, cost_usd, price_of
from acp_hermes.prompt import PromptInputs, build_system_prompt
from acp_hermes.transcript import Transcript, history_from_rows
from tools.registry import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from concurrent.futures import Future

    from acp_hermes.llm import AnthropicProvider
    from acp_hermes.loop import StopReason, TurnSettings
    from memory.session_db import MessageRecord, SessionDB, SessionRecord
    from memory.store import MemoryStore

log = logging.getLogger(__name__)

PLAN_MODE_NOTE = (
    "[Plan mode is on: the session is read-only. Explore with read-only tools and reply with a plan; "
    "edits and commands will be refused.]"
)


class SessionNotFoundError(LookupError):
    """No session with this id, in memory or in the SessionDB."""


@dataclass
class Runtime:
    """Process-wide services every session shares, built on first use."""

    settings: Settings
    paths: Paths
    abilities: ClientAbilities = field(default_factory=ClientAbilities)
    db_opening: Future[SessionDB] | None = None  # state.db being opened on a thread since start-up
    _provider: AnthropicProvider | None = None
    _registry: ToolRegistry | None = None
    _db: SessionDB | None = None
    _db_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _memory: MemoryStore | None = None

    @property
    def provider(self) -> AnthropicProvider:
        if self._provider is None:
            from acp_hermes.llm import AnthropicProvider

            self._provider = AnthropicProvider(self.settings)
        return self._provider

    @property
    def registry(self) -> ToolRegistry:
        if self._registry is None:
            from tools import core_tools

            self._registry = ToolRegistry(core_tools())
        return self._registry

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools' names without building the registry, which imports every tool module."""
        from tools import CORE_TOOL_NAMES

        return frozenset(CORE_TOOL_NAMES)

    @property
    def db(self) -> SessionDB:
        """The SessionDB: the one opened since start-up, or opened now (also when that failed)."""
        with self._db_lock:
            if self._db is None:
                opening, self.db_opening = self.db_opening, None
                if opening is not None:
                    self._db = opening.result()
                else:
                    from memory.session_db import SessionDB

                    self._db = SessionDB(self.paths.state_db)
            return self._db

    @property
    def memory(self) -> MemoryStore:
        if self._memory is None:
            from memory.store import MemoryStore

            self._memory = MemoryStore(
                self.paths.memories, self.settings.memory_char_limit, self.settings.user_char_limit
            )
        return self._memory

    def record_usage(self, session_id: str, model: str, usage: Usage, api_calls: int = 1) -> None:
        """Add a model call's tokens and cost to the session (blocking: call it in a thread)."""
        from memory.session_db import SessionNotFound

        price = price_of(model, self.settings)
        cost = cost_usd(usage, price, self.settings.cache_ttl) if price is not None else 0.0
        with contextlib.suppress(SessionNotFound):  # deleted meanwhile: nothing left to charge
            self.db.add_usage(
                session_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=cost,
                api_calls=api_calls,
            )

    def services(self) -> dict[str, Any]:
        return {
            "memory": self.memory,
            "db": self.db,
            "provider": self.provider,
            "settings": self.settings,
            "record_usage": self.record_usage,
        }

    async def aclose(self) -> None:
        if self._provider is not None:
            await self._provider.aclose()
        opening, self.db_opening = self.db_opening, None
        if opening is not None and self._db is None:
            with contextlib.suppress(Exception):  # opening failed: nothing to close
                self._db = await anyio.to_thread.run_sync(opening.result)
        if self._db is not None:
            self._db.close()


class Session:
    """One ACP session: its state, its conversation and its running turn."""

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
        client: Requester,
        sink: EventSink,
        asker: Asker,
        title: str | None = None,
    ) -> None:
        self.id = session_id
        self.cwd = cwd
        self.additional_directories = additional_directories
        self.choices = choices
        self.system_prompt = system_prompt
        self.transcript = transcript
        self.title = title
        self.last_context_tokens = 0
        self._runtime = runtime
        self._sink = sink
        self.editor = ClientEditor(client, session_id, runtime.abilities)
        self.gate = PermissionGate(
            asker=asker,
            mode=choices.mode,
            home=Path.home(),
            hermes_home=runtime.paths.home,
            project=ProjectGrants(runtime.paths.permissions_file, cwd),
        )
        self.scratch: dict[str, Any] = {}
        self._hints = SubdirectoryHintTracker(cwd, additional_directories)
        self._turn_lock: anyio.Lock | None = None  # made by the first prompt: session/new need not load anyio's backend
        self._cancel_epoch = 0
        self._scope: anyio.CancelScope | None = None
        self.closed = False
        # Called once, after the first turn that completes while the session has no title.
        self.on_first_exchange: Callable[[Session], None] | None = None
        self._naming_started = False

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.additional_directories)

    def set_choice(self, option_id: str, value: Any) -> None:
        apply_choice(self.choices, self._runtime.settings, option_id, value)
        self.gate.mode = self.choices.mode
        self._persist_choices()

    def set_mode(self, mode_id: str) -> None:
        self.choices.mode = parse_mode(mode_id)
        self.gate.mode = self.choices.mode
        self._persist_choices()

    def _persist_choices(self) -> None:
        self._runtime.db.update_session(
            self.id, mode=self.choices.mode.value, model=self.choices.model, model_config=self.choices.as_config()
        )

    def _tool_context(self, call_id: str, title: str, sink: EventSink) -> ToolContext:
        return ToolContext(
            call_id=call_id,
            title=title,
            session_id=self.id,
            cwd=self.cwd,
            roots=self.roots,
            editor=self.editor,
            gate=self.gate,
            sink=sink,
            scratch=self.scratch,
            services=self._runtime.services(),
        )

    def _turn_settings(self) -> TurnSettings:
        from acp_hermes.loop import TurnSettings

        settings = self._runtime.settings
        level = self.choices.thought_level
        return TurnSettings(
            model=self.choices.model,
            max_tokens=settings.max_output_tokens,
            thinking_budget=None if level == "off" else settings.thinking_budgets.get(level),
            max_iterations=settings.max_iterations,
            cache_ttl=settings.cache_ttl,
        )

    async def prompt(self, blocks: list[dict[str, Any]]) -> StopReason:
        """Run one prompt to its end; queued behind a running turn if there is one."""
        epoch = self._cancel_epoch
        if self._turn_lock is None:
            self._turn_lock = anyio.Lock()
        async with self._turn_lock:
            if epoch != self._cancel_epoch or self.closed:
                return "cancelled"
            return await self._run(blocks)

    async def _run(self, blocks: list[dict[str, Any]]) -> StopReason:
        # Only turns need these; server._warm_up loads them right after session/new.
        from acp_hermes.content import convert_prompt
        from acp_hermes.loop import AgentLoop

        converted = await anyio.to_thread.run_sync(convert_prompt, blocks, self.cwd)
        content = list(converted.content)
        if self.choices.mode is Mode.PLAN:
            content.append({"type": "text", "text": PLAN_MODE_NOTE})
        loop = AgentLoop(
            provider=self._runtime.provider,
            registry=self._runtime.registry,
            sink=self._sink,
            transcript=self.transcript,
            system_prompt=self.system_prompt,
            make_context=self._tool_context,
            cwd=self.cwd,
            hints=self._hints,
        )
        stop: StopReason = "cancelled"
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                stop = (await loop.run_turn(content, converted.plain_text, blocks, self._turn_settings())).stop_reason
            finally:
                self._scope = None
        result = loop.result  # also what a cancelled turn used before it stopped
        if result.model_calls:
            await self._account(result.usage, result.model_calls, result.context_tokens)
        await self.report_usage()
        if stop != "cancelled" and not self.title and not self._naming_started and self.on_first_exchange:
            self._naming_started = True
            self.on_first_exchange(self)
        log.info("session %s: turn ended (%s)", self.id, stop)
        return stop

    async def _account(self, usage: Usage, model_calls: int, context_tokens: int) -> None:
        self.last_context_tokens = context_tokens
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                self._runtime.record_usage, self.id, self.choices.model, usage, model_calls
            )

    async def report_usage(self) -> None:
        """``usage_update``: context used against the window, and the session's cost so far."""
        settings = self._runtime.settings
        cost = None
        if price_of(self.choices.model, settings) is not None:
            record = await anyio.to_thread.run_sync(self._runtime.db.get_session, self.id)
            cost = record.estimated_cost_usd if record is not None else 0.0
        await self._sink.emit(
            UsageReported(
                used=self.last_context_tokens,
                size=context_window(self.choices.model, settings),
                cost_usd=cost,
            )
        )

    async def emit(self, event: Event) -> None:
        await self._sink.emit(event)

    def cancel(self) -> None:
        """Stop the running turn and every prompt queued before now; idle → nothing happens."""
        self._cancel_epoch += 1
        if self._scope is not None:
            self._scope.cancel()

    def close(self) -> None:
        self.closed = True
        self.cancel()


@dataclass
class SessionFactoryArgs:
    client: Requester
    sink_for: Callable[[str], EventSink]
    asker_for: Callable[[str], Asker]


class SessionManager:
    """Live sessions of this process, backed by the shared SessionDB."""

    def __init__(self, runtime: Runtime, wiring: SessionFactoryArgs) -> None:
        self.runtime = runtime
        self._wiring = wiring
        self._live: dict[str, Session] = {}

    def get(self, session_id: str) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    def _build(
        self, record: SessionRecord, rows: Sequence[MessageRecord], cwd: Path, extra: tuple[Path, ...]
    ) -> Session:
        settings = self.runtime.settings
        config = record.model_config or {}
        choices = SessionChoices(
            mode=Mode(record.mode) if record.mode in {m.value for m in Mode} else Mode(settings.default_mode),
            model=record.model or settings.model,
            thought_level=config.get("thought_level", settings.thought_level),
        )
        session = Session(
            session_id=record.id,
            cwd=cwd,
            additional_directories=extra,
            choices=choices,
            system_prompt=record.system_prompt or "",
            transcript=Transcript(record.id, self.runtime.db, history_from_rows(rows)),
            runtime=self.runtime,
            client=self._wiring.client,
            sink=self._wiring.sink_for(record.id),
            asker=self._wiring.asker_for(record.id),
            title=record.title,
        )
        _restore_tool_state(session.scratch, rows)
        session.last_context_tokens = _estimated_context(session.system_prompt, rows)
        self._live[record.id] = session
        return session

    def system_prompt(self, session_id: str, cwd: Path, extra: tuple[Path, ...]) -> str:
        settings = self.runtime.settings
        return build_system_prompt(
            PromptInputs(
                paths=self.runtime.paths,
                cwd=cwd,
                session_id=session_id,
                now=datetime.now().astimezone(),
                system_message=settings.system_message,
                memory_block=self.runtime.memory.snapshot().render(),
                skills_index="",
                tool_names=self.runtime.tool_names,
                context_file_max_chars=settings.context_file_max_chars,
                additional_directories=extra,
            )
        )

    def new_choices(self) -> SessionChoices:
        """What a new session starts with: known before create() has built and stored it."""
        settings = self.runtime.settings
        return SessionChoices(mode=Mode(settings.default_mode), model=settings.model,
                              thought_level=settings.thought_level)

    def create(self, cwd: Path, extra: tuple[Path, ...], session_id: str | None = None) -> Session:
        """Build the session's frozen system prompt and store it with the new session."""
        session_id = session_id or str(uuid.uuid4())
        choices = self.new_choices()
        record = self.runtime.db.create_session(
            session_id,
            cwd=str(cwd),
            model=choices.model,
            mode=choices.mode.value,
            model_config=choices.as_config(),
            system_prompt=self.system_prompt(session_id, cwd, extra),
            additional_directories=[str(p) for p in extra],
        )
        return self._build(record, (), cwd, extra)

    def restore(
        self, session_id: str, cwd: Path, extra: tuple[Path, ...], rows: Sequence[MessageRecord] | None = None
    ) -> Session:
        """The live session, or one rebuilt from the SessionDB (from ``rows`` when the caller has
        already read its messages); unknown ids raise."""
        live = self._live.get(session_id)
        if live is not None:
            return live
        record = self.runtime.db.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        if rows is None:
            rows = self.runtime.db.messages(session_id)
        if str(cwd) != record.cwd:
            self.runtime.db.update_session(session_id, cwd=str(cwd))
        return self._build(record, rows, cwd, extra)

    def fork(self, source_id: str, cwd: Path, extra: tuple[Path, ...]) -> Session:
        if source_id in self._live:
            source = self._live[source_id]
            self.runtime.db.update_session(
                source_id, mode=source.choices.mode.value, model=source.choices.model,
                model_config=source.choices.as_config(),
            )
        source_record = self.runtime.db.get_session(source_id)
        if source_record is None:
            raise SessionNotFoundError(source_id)
        new_id = str(uuid.uuid4())
        # A fork never has a first exchange of its own to be named after: it starts from the source's name.
        title = f"{source_record.title} (fork)" if source_record.title else None
        record = self.runtime.db.fork_session(
            source_id, new_id, cwd=str(cwd), additional_directories=[str(p) for p in extra], title=title
        )
        return self._build(record, self.runtime.db.messages(new_id), cwd, extra)

    def close(self, session_id: str) -> None:
        session = self._live.pop(session_id, None)
        if session is None:
            if self.runtime.db.get_session(session_id) is None:
                raise SessionNotFoundError(session_id)
            return
        session.close()

    def delete(self, session_id: str) -> None:
        session = self._live.pop(session_id, None)
        if session is not None:
            session.close()
        if not self.runtime.db.delete_session(session_id) and session is None:
            raise SessionNotFoundError(session_id)


def _restore_tool_state(scratch: dict[str, Any], rows: Sequence[MessageRecord]) -> None:
    """Session-local tool state a reloaded conversation continues with: the todo list."""
    from tools.todo import restore_todos

    for row in reversed(rows):
        display = row.display if isinstance(row.display, dict) else {}
        if row.role == "tool" and row.tool_name == "todo" and display.get("status") == "completed":
            restore_todos(scratch, display.get("rawOutput"))
            return


def _estimated_context(system_prompt: str, rows: Sequence[MessageRecord]) -> int:
    """Roughly how many tokens a restored conversation holds (about 4 characters a token), so the
    editor's context gauge is not empty until the next model call reports the exact figure."""
    characters = len(system_prompt) + sum(len(row.content) + len(row.reasoning or "") for row in rows)
    return characters // 4
