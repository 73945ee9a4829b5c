"""The live sessions of this process, backed by the shared SessionDB: the front door for sessions.

``SessionManager`` is the one way to make a session and to find one: ``create`` (or ``create_soon``,
which answers with the id and choices before the session is built), ``restore``, ``fork``, ``get``,
``close`` and ``delete``. It builds each ``Session`` complete (sink, asker, editor, background work,
title, prompt rebuild) and knows when each is ready: ``get`` waits for a session still being built,
so a request that comes right after ``session/new`` finds it ready whatever order tasks run in. Its
SessionDB work, and building the frozen system prompt, run off the event loop (``anyio.to_thread``).

A child session (a future subagent) is made by the same call as the client's sessions::

    child = await manager.create(parent.cwd, parent.additional_directories, parent_id=parent.id,
                                 links=SessionLinks(sink=child_sink, asker=..., editor=parent.editor))

It gets its own id, its parent's id (on ``SessionState.parent_id`` and the stored row's
``parent_session_id``) and its own event sink; ``links`` replaces the client's wiring for it, so
the client is not told it opened (``SessionWiring.opened`` is not called). A delegated task's child
is made by ``create_child`` and ended by ``end_child``: the manager is the one keeper of which
children a session has running (``children_of``), so its cancel and mode reach them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core.choices import SessionChoices, allowed_choices, new_session_choices, stored_budget
from acp_hermes.core.errors import InvalidInput, SessionCreationFailed, SessionNotFoundError, not_for_a_subagent
from acp_hermes.core.events import EventSink
from acp_hermes.core.runtime import Runtime
from acp_hermes.core.session import Session
from acp_hermes.core.state import SessionState
from acp_hermes.core.transcript import (
    Transcript,
    announced_calls,
    history_from_rows,
    newest_row,
    restored_context,
)
from acp_hermes.permissions.gate import Asker
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import Editor

if TYPE_CHECKING:
    from acp_hermes.core.budget import Budget
    from acp_hermes.core.checkpoints import SessionCheckpoints
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.core.rewind import MessagePoint
    from acp_hermes.core.trust import WorkspaceTrust
    from acp_hermes_memory.session_db import MessageRecord, SessionRecord
    from acp_hermes_tools.mcp.specs import McpServerSpec
    from acp_hermes_tools.registry import Tool

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]  # starts a background job beside the caller

# What to do instead of driving a subagent's session directly (see ``get_for_client``).
OPEN_THE_PARENT = "it cannot be opened on its own; load its parent, or find its work with session_search"
FORK_THE_PARENT = "it cannot be forked on its own; fork its parent"
CLOSE_THE_PARENT = "it ends with its task; stop it with session/cancel, or close its parent"
DELETE_THE_PARENT = "it is deleted with its parent; delete the parent"


def _nothing(session: Session) -> None:
    pass


@value
class SessionWiring:
    """How the client's sessions reach it: per session id, where events go, who answers
    permission questions, and the editor that does its file and command I/O; and what the
    client is told once a session is open (called before any request on it runs)."""

    sink_for: Callable[[str], EventSink]
    asker_for: Callable[[str], Asker]
    editor_for: Callable[[str], Editor]
    opened: Callable[[Session], None] = _nothing


@value
class SessionLinks:
    """One session's ends, given directly instead of through the wiring (a child session's)."""

    sink: EventSink
    asker: Asker
    editor: Editor
    checkpoints: SessionCheckpoints | None = None  # its parent's: a child's changes are its parent's turn's
    budget: Budget | None = None  # its parent's: a child's spend is its parent's


@value
class NewSession:
    """What ``create_soon`` knows at once: the new session's id and the choices it starts with."""

    id: str
    choices: SessionChoices


@value
class Forked:
    """A fork as its client is answered (the session itself is built just after), and when it was cut
    at a message before a turn that changed files, the checkpoint that ``/rollback`` in the source
    would take them back to: files are not forked, so its workspace holds what the later turns left."""

    session_id: str
    choices: SessionChoices
    title: str | None
    rollback: int | None = None


@value
class _ForkPlan:
    record: SessionRecord  # the source's
    segment: str  # its current segment: what is copied
    title: str | None
    last_row: int | None = None  # the last row copied (None: all of them)
    later: bool = False  # the source goes on after that row


@value
class _Stored:
    """A session as read from the SessionDB (off the event loop), ready to be built."""

    record: SessionRecord
    system_prompt: str
    transcript: Transcript
    rows: Sequence[MessageRecord]  # every segment's rows, for a replay
    tool_results: list[tuple[str, Any]]
    context: tuple[int, int]
    trust: WorkspaceTrust  # whether its workspace may speak (core.trust), read beside the rest


class _Opening:
    """A session being built: requests on it wait here until it is ready (or could not be made).

    Its event is made by the first waiter: ``create_soon`` runs on the way to the ``session/new``
    answer, which must not load anyio's backend (DESIGN.md invariant 8)."""

    __slots__ = ("_event", "done")

    def __init__(self) -> None:
        self._event: anyio.Event | None = None
        self.done = False

    async def wait(self) -> None:
        if not self.done:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()

    def finish(self) -> None:
        self.done = True
        if self._event is not None:
            self._event.set()


class SessionManager:
    """Makes, finds and ends sessions; ``spawn`` runs their background work (and ``create_soon``'s)."""

    def __init__(self, runtime: Runtime, wiring: SessionWiring, spawn: Spawn) -> None:
        self.runtime = runtime
        self._wiring = wiring
        self._spawn = spawn
        self._live: dict[str, Session] = {}
        self._children: dict[str, dict[str, Session]] = {}  # each parent's running children (delegate_task)
        self._opening: dict[str, _Opening] = {}
        self._failed: dict[str, str] = {}  # sessions create_soon answered for, but could not make
        self._closing = False  # the client is gone: sessions still being built are closed when ready

    def live(self) -> list[Session]:
        return list(self._live.values())

    async def get(self, session_id: str) -> Session:
        """The live session, once it is ready; unknown ids (and sessions that could not be made) raise."""
        opening = self._opening.get(session_id)
        if opening is not None:
            await opening.wait()
        session = self._live.get(session_id)
        if session is None:
            failure = self._failed.get(session_id)
            if failure is not None:
                raise SessionCreationFailed(session_id, failure)
            raise SessionNotFoundError(session_id)
        return session

    async def get_for_client(self, session_id: str, instead: str) -> Session:
        """``get`` for a request that drives the session (its mode, a rewind, a steer): a subagent's
        session is refused, saying ``instead`` what to do; its parent drives it."""
        session = await self.get(session_id)
        if session.subagent is not None:
            raise not_for_a_subagent(session.id, session.state.parent_id, instead)
        return session

    # -- making sessions

    def new_choices(self, cwd: Path | None = None) -> SessionChoices:
        """What a new session (in ``cwd``: a trusted project's model and thinking level) starts with:
        known before it is built and stored."""
        from acp_hermes.core.trust import starting_settings

        return new_session_choices(self.runtime, starting_settings(self.runtime, cwd) if cwd is not None else None)

    def create_soon(self, cwd: Path, extra: tuple[Path, ...] = (), *,
                    mcp_servers: Callable[[], Sequence[McpServerSpec]] = tuple,
                    announced: NewSession | None = None) -> NewSession:
        """``create`` in the background: the id and choices now (what ``session/new`` answers with),
        the session once built; ``get`` waits for it, and raises ``SessionCreationFailed`` if it
        could not be made. ``mcp_servers`` is called as the session is built (converting the
        editor's list imports code the answer need not wait for). ``announced``: the id and choices
        the client was given already (by the adapter's reception, before the handlers existed)."""
        self.runtime.db  # noqa: B018  opened now, so a database that cannot be opened fails the caller itself
        new = announced or NewSession(str(uuid.uuid4()), self.new_choices(cwd))
        self._opening[new.id] = _Opening()
        self._spawn(self._create_in_background(new, cwd, extra, mcp_servers))
        return new

    def could_not_create(self, session_id: str, why: str) -> None:
        """A session the client was told of (``announced``) that could not even be begun: requests on
        it raise ``SessionCreationFailed`` saying why."""
        self._failed[session_id] = why

    async def _create_in_background(self, new: NewSession, cwd: Path, extra: tuple[Path, ...],
                                    mcp_servers: Callable[[], Sequence[McpServerSpec]]) -> None:
        try:
            await self.create(cwd, extra, session_id=new.id, choices=new.choices, mcp_servers=mcp_servers())
        except Exception as exc:
            log.exception("session %s could not be created in %s", new.id, cwd)
            self._failed[new.id] = f"{type(exc).__name__}: {exc}"  # before a waiter runs: none has yet
        finally:
            opening = self._opening.pop(new.id, None)  # when create itself was never reached
            if opening is not None:
                opening.finish()

    async def create(self, cwd: Path, extra: tuple[Path, ...] = (), *, session_id: str | None = None,
                     parent_id: str | None = None, links: SessionLinks | None = None,
                     choices: SessionChoices | None = None, subagent: SubagentSpec | None = None,
                     mcp_servers: Sequence[McpServerSpec] = (), trust: WorkspaceTrust | None = None) -> Session:
        """A new session, stored with its frozen system prompt (built now), ready for prompts.

        ``parent_id`` names the session that started it and ``links`` gives it its own ends (a
        child session: see the module's docstring); ``choices`` default to ``new_choices()``; ``trust``
        to its workspace's as decided now (a child's is its parent's)."""
        session_id = session_id or str(uuid.uuid4())
        choices = choices or self.new_choices(cwd)
        opening = self._opening.setdefault(session_id, _Opening())
        try:
            stored = await anyio.to_thread.run_sync(self._store_new, session_id, cwd, extra, choices, parent_id,
                                                    subagent, trust)
            session = self._open(stored, cwd, extra, links, mcp_servers, parent_id, subagent, choices)
        finally:
            self._opening.pop(session_id, None)
            opening.finish()
        log.info("session %s created in %s", session_id, cwd)
        return session

    def _store_new(self, session_id: str, cwd: Path, extra: tuple[Path, ...], choices: SessionChoices,
                   parent_id: str | None, subagent: SubagentSpec | None = None,
                   trust: WorkspaceTrust | None = None) -> _Stored:
        """Build the frozen system prompt and store the new session (blocking)."""
        self.runtime.import_session_code()
        from acp_hermes.core.trust import open_trust
        from acp_hermes_memory.session_db import SUBAGENT_SOURCE

        trust = trust or open_trust(self.runtime, cwd, extra)
        child = {} if subagent is None else {"source": SUBAGENT_SOURCE, "title": subagent.title}
        record = self.runtime.db.create_session(
            session_id,
            cwd=str(cwd),
            model=choices.model,
            mode=choices.mode.value,
            model_config=choices.as_config(),
            system_prompt=self.system_prompt(session_id, cwd, extra, subagent, trust),
            parent_session_id=parent_id,
            additional_directories=[str(p) for p in extra],
            **child,
        )
        return self._read(record, (), trust)

    async def restore(
        self, session_id: str, cwd: Path, extra: tuple[Path, ...] = (), *,
        mcp_servers: Sequence[McpServerSpec] = (),
        show: Callable[[Session, Sequence[MessageRecord]], Awaitable[None]] | None = None,
    ) -> tuple[Session, Sequence[MessageRecord]]:
        """The live session, or one rebuilt from the SessionDB, with its stored messages (every
        segment's; of a session that is live, only when ``show`` wants them); unknown ids raise.

        ``show`` is what the client sees of it before anything else happens on it (the replay of
        ``session/load``): it runs before the MCP servers start and before the session is ready."""
        opening = self._opening.get(session_id)
        if opening is not None:  # restored by another request right now: that one builds it
            await opening.wait()
        live = self._live.get(session_id)
        if live is not None and live.subagent is not None:  # opened here, it would be driven twice
            raise not_for_a_subagent(session_id, live.state.parent_id, OPEN_THE_PARENT)
        if live is not None:
            rows: Sequence[MessageRecord] = ()
            if show is not None:
                rows = await anyio.to_thread.run_sync(self.runtime.db.messages, session_id)
                await show(live, rows)
            self._opened(live, None, mcp_servers)
            return live, rows
        opening = self._opening[session_id] = _Opening()
        try:
            # What a session needs beyond initialize is imported beside the read, not after it.
            self._spawn(anyio.to_thread.run_sync(self.runtime.import_session_code))
            stored = await anyio.to_thread.run_sync(self._read_stored, session_id, cwd, extra)
            session = self._build(stored, cwd, extra, None, None)
            if show is not None:
                await show(session, stored.rows)
            self._opened(session, None, mcp_servers)
        finally:
            self._opening.pop(session_id, None)
            opening.finish()
        return session, stored.rows

    def _read_stored(self, session_id: str, cwd: Path, extra: tuple[Path, ...] = ()) -> _Stored:
        """A stored session's record and rows, its cwd updated, its workspace's trust (blocking). Its
        system prompt is kept as stored, whatever the workspace's standing now (a decision rebuilds it)."""
        db = self.runtime.db
        record = db.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        if record.subagent_label is not None:  # its parent drove it; as a session of its own it would lose its limits
            raise not_for_a_subagent(session_id, record.parent_session_id, OPEN_THE_PARENT)
        from acp_hermes_memory.session_db import REWOUND_SOURCE

        if record.source == REWOUND_SOURCE:  # the later turns a rewind set aside: no conversation on their own
            raise InvalidInput(f"session {session_id} holds turns rewound out of another session ({record.label}); "
                               "load that session, or find these turns with session_search")
        rows = db.messages(session_id)  # ~0.1 s for 5,000 messages: one read serves history and replay
        if str(cwd) != record.cwd:
            db.update_session(session_id, cwd=str(cwd))
        from acp_hermes.core.trust import open_trust

        stored = self._read(record, rows, open_trust(self.runtime, cwd, extra))
        self.runtime.import_session_code()  # done by now when restore started it beside the read
        return stored

    async def fork(self, source_id: str, cwd: Path, extra: tuple[Path, ...] = (), *,
                   mcp_servers: Sequence[McpServerSpec] = (), at: MessagePoint | None = None) -> Forked:
        """A new session holding a copy of ``source_id``'s conversation as it is now, or up to the
        message ``at`` names, that message included (with the results of its tool calls). The source is
        left as it was.

        Answered once the fork is known to be possible (the source found, the message located): the
        copy (tens of MB for a long session: most of a fork's time) and the session's build run just
        after, as ``create_soon``'s do, and requests on the fork wait for them (``get``)."""
        source = self._live.get(source_id)
        if source is not None and source.subagent is not None:
            raise not_for_a_subagent(source_id, source.state.parent_id, FORK_THE_PARENT)
        live_choices = None if source is None else (source.choices.mode.value, source.choices.model,
                                                    source.choices.as_config())
        plan = await anyio.to_thread.run_sync(self._plan_fork, source_id, live_choices, at)
        choices = self._choices_of(plan.record)
        rollback = None
        if plan.later and self.runtime.settings.checkpoints.enabled:
            rollback = await self._rollback_for(source, source_id, plan.last_row or 0)
        new_id = str(uuid.uuid4())
        self._opening[new_id] = _Opening()
        self._spawn(self._fork_in_background(plan, new_id, cwd, extra, choices, mcp_servers))
        return Forked(new_id, choices, plan.title, rollback)

    async def _fork_in_background(self, plan: _ForkPlan, new_id: str, cwd: Path, extra: tuple[Path, ...],
                                  choices: SessionChoices, mcp_servers: Sequence[McpServerSpec]) -> None:
        try:
            stored = await anyio.to_thread.run_sync(self._store_fork, plan, new_id, cwd, extra)
            self._open(stored, cwd, extra, None, mcp_servers, None, choices=choices)
        except Exception as exc:
            log.exception("session %s could not be forked from %s", new_id, plan.record.id)
            self._failed[new_id] = f"{type(exc).__name__}: {exc}"
        finally:
            opening = self._opening.pop(new_id, None)
            if opening is not None:
                opening.finish()

    async def _rollback_for(self, source: Session | None, source_id: str, last_row: int) -> int | None:
        """The source's checkpoint that ``/rollback`` would take its files back to at row ``last_row``."""
        from acp_hermes.core.rewind import rollback_for

        if source is not None:
            checkpoints = source.services.checkpoints
        else:
            from acp_hermes.core.checkpoints import SessionCheckpoints

            record = await anyio.to_thread.run_sync(self.runtime.db.get_session, source_id)
            if record is None or not record.cwd:
                return None
            workspace = Path(record.cwd)
            checkpoints = SessionCheckpoints(source_id, lambda: self.runtime.checkpoints_for(workspace),
                                             lambda _: None)
        return rollback_for(await checkpoints.entries(), last_row)

    def _plan_fork(self, source_id: str, live_choices: tuple[str, str, dict[str, Any]] | None,
                   at: MessagePoint | None) -> _ForkPlan:
        """What a fork copies, checked (blocking): the source's record, its segment now, the last row."""
        db = self.runtime.db
        if live_choices is not None:  # the live source's choices as they are now
            mode, model, config = live_choices
            db.update_session(source_id, mode=mode, model=model, model_config=config)
        source_record = db.get_session(source_id)
        if source_record is None:
            raise SessionNotFoundError(source_id)
        if source_record.subagent_label is not None:  # a copy would be a session of its own without its limits
            raise not_for_a_subagent(source_id, source_record.parent_session_id, FORK_THE_PARENT)
        # A fork never has a first exchange of its own to be named after: it starts from the source's name.
        title = f"{source_record.title} (fork)" if source_record.title else None
        latest = db.segments(source_id)[-1].id  # after compactions: the history as it is now
        if at is None:
            return _ForkPlan(source_record, latest, title)
        from acp_hermes.core.rewind import locate

        last_row = locate(db, source_id, at).last_row
        news = db.segment_news(latest, last_row)
        return _ForkPlan(source_record, latest, title, last_row, bool(news and news.message_ids))

    def _store_fork(self, plan: _ForkPlan, new_id: str, cwd: Path, extra: tuple[Path, ...]) -> _Stored:
        """The fork stored and read (blocking)."""
        db = self.runtime.db
        source = plan.record
        record = db.fork_session(
            plan.segment, new_id, cwd=str(cwd), additional_directories=[str(p) for p in extra], title=plan.title,
            model=source.model, mode=source.mode, model_config=source.model_config, up_to=plan.last_row,
        )
        self.runtime.import_session_code()
        from acp_hermes.core.trust import open_trust

        return self._read(record, db.messages(new_id), open_trust(self.runtime, cwd, extra))

    def _choices_of(self, record: SessionRecord) -> SessionChoices:
        """A stored session's choices, as this machine allows them."""
        settings = self.runtime.settings
        config = record.model_config or {}
        return allowed_choices(self.runtime, SessionChoices(
            mode=Mode(record.mode) if record.mode in {m.value for m in Mode} else settings.default_mode,
            model=record.model or settings.model,
            thought_level=config.get("thought_level", settings.thought_level),
            budget=stored_budget(config),
        ))

    def _read(self, record: SessionRecord, rows: Sequence[MessageRecord], trust: WorkspaceTrust) -> _Stored:
        """What the live session for a stored one is built from, and its rows as the session now
        has them (blocking: reads and may write the SessionDB)."""
        db = self.runtime.db
        # Compaction continues a conversation in new segments: the model sees the last one's
        # history, the editor replays them all.
        segments = db.segments(record.id) if rows else [record]
        current = segments[-1]
        later = [db.messages(segment.id) for segment in segments[1:]]
        read = later[-1] if later else rows
        transcript = Transcript(current.id, db, history_from_rows(read), synced_to=newest_row(read))
        left_open = transcript.last_calls_left_open()
        if left_open:  # the process that ran them was killed, or the editor quit mid-turn
            transcript.close_interrupted(left_open, announced_calls(later[-1] if later else rows))
            if later:
                later[-1] = db.messages(current.id)
            else:
                rows = db.messages(record.id)
        history_rows = later[-1] if later else rows
        rows = [*rows, *(row for segment in later for row in segment)]
        system_prompt = current.system_prompt or ""
        tool_results = [
            (row.tool_name, row.display.get("raw_output"))
            for row in rows
            if row.role == "tool" and row.tool_name and isinstance(row.display, dict)
            and row.display.get("status") == "completed"
        ]
        context = restored_context(system_prompt, history_rows, len(transcript.messages), carried=bool(later))
        return _Stored(record, system_prompt, transcript, rows, tool_results, context, trust)

    def _open(self, stored: _Stored, cwd: Path, extra: tuple[Path, ...], links: SessionLinks | None,
              mcp_servers: Sequence[McpServerSpec], parent_id: str | None,
              subagent: SubagentSpec | None = None, choices: SessionChoices | None = None) -> Session:
        session = self._build(stored, cwd, extra, links, parent_id, subagent, choices)
        self._opened(session, links, mcp_servers)
        return session

    def _build(self, stored: _Stored, cwd: Path, extra: tuple[Path, ...], links: SessionLinks | None,
               parent_id: str | None, subagent: SubagentSpec | None = None,
               choices: SessionChoices | None = None) -> Session:
        """The live session for a stored one, complete (on the event loop: it may start work there);
        ``choices``: a new session's, as its creator was answered (else read from the stored row)."""
        from acp_hermes.core.services import build_services

        record, trust = stored.record, stored.trust
        choices = choices or self._choices_of(record)
        session_id = record.id
        state = SessionState(session_id=session_id, cwd=cwd, additional_directories=extra, choices=choices,
                             system_prompt=stored.system_prompt, transcript=stored.transcript, title=record.title,
                             parent_id=parent_id, subagent=subagent, context=stored.context,
                             stored_tool_results=stored.tool_results)
        services = build_services(
            self.runtime, state,
            sink=links.sink if links is not None else self._wiring.sink_for(session_id),
            asker=links.asker if links is not None else self._wiring.asker_for(session_id),
            editor=links.editor if links is not None else self._wiring.editor_for(session_id),
            spawn=self._spawn, children=self, on_first_exchange=lambda: self._name(session_id),
            rebuild_prompt=lambda: self.system_prompt(session_id, cwd, extra, subagent, trust), trust=trust,
            checkpoints=links.checkpoints if links is not None else None,
            budget=links.budget if links is not None else None,
        )
        session = Session(state, services)
        self._live[session_id] = session
        return session

    def _opened(self, session: Session, links: SessionLinks | None, mcp_servers: Sequence[McpServerSpec]) -> None:
        """Start what an open session runs beside it and tell its client, before it is ready."""
        if self._closing:  # the client went away while it was being built
            session.close()
            return
        if links is None:  # a child has no MCP servers of its own, and its client was told of it by its parent
            notice, session.choices.start_notice = session.choices.start_notice, ""
            if notice:  # it did not start in bypass: said once, after a load's replay
                session.services.notify(notice)
            for notice in session.services.trust.notices():  # what of a trusted workspace's settings was left out
                session.services.notify(notice)
            session.services.connect_mcp(session.state.cwd, mcp_servers)
            session.services.hooks.start(self._spawn, "resume" if session.state.transcript.messages else "startup")
            self._wiring.opened(session)
            from acp_hermes.core.skill_upkeep import after_open

            self._spawn(after_open(session, self.runtime.paths.skills_upkeep))

    def _name(self, session_id: str) -> None:
        """Name a session after its first exchange, in the background."""
        from acp_hermes.core.titles import name_session

        session = self._live.get(session_id)
        if session is not None:
            self._spawn(name_session(session.state, session.services, session.wait_until_idle))

    # -- children (core.delegation)

    async def create_child(self, parent: Session, child_id: str, spec: SubagentSpec, sink: EventSink,
                           asker: Asker) -> Session:
        """A delegated task's session, one of ``parent``'s running children from now on: in its parent's
        workspace, with its parent's mode, model and thinking, its own sink and the given asker, doing
        its I/O through its parent's editor, its changes in its parent's checkpoint, its spend in its
        parent's budget."""
        state, services = parent.state, parent.services
        choices = allowed_choices(self.runtime, SessionChoices(mode=state.choices.mode, model=state.choices.model,
                                                               thought_level=state.choices.thought_level))
        links = SessionLinks(sink=sink, asker=asker, editor=services.editor, checkpoints=services.checkpoints,
                             budget=services.budget)
        child = await self.create(state.cwd, state.additional_directories, session_id=child_id, parent_id=parent.id,
                                  links=links, choices=choices, subagent=spec, trust=services.trust)
        self._children.setdefault(parent.id, {})[child_id] = child  # from here on, the parent's cancel reaches it
        return child

    def children_of(self, parent_id: str) -> Sequence[Session]:
        return list(self._children.get(parent_id, {}).values())

    def delegate_tool(self, parent_id: str) -> Tool:
        from acp_hermes.core.delegation import delegate_tool

        return delegate_tool(lambda: self._live.get(parent_id), self)

    async def end_child(self, child_id: str) -> None:
        """A child's task is over: it stops (its background jobs too) and is forgotten; it stays stored."""
        child = self._live.pop(child_id, None)
        if child is None:
            return
        parent_id = child.state.parent_id or ""
        running = self._children.get(parent_id, {})
        running.pop(child_id, None)
        if not running:
            self._children.pop(parent_id, None)
        child.close()

    def system_prompt(self, session_id: str, cwd: Path, extra: tuple[Path, ...],
                      subagent: SubagentSpec | None = None, trust: WorkspaceTrust | None = None) -> str:
        """A session's system prompt as its files are now (blocking: reads them, scans for injection).
        A child's has no SOUL.md, memory or configured system message: its task is all it knows. The
        workspace's instruction files, skills and settings' message are in only while ``trust`` (as
        decided now when not given) holds."""
        # Imported here, once a session is built: the prompt code and its injection scanner are not
        # needed to answer initialize or session/new.
        from acp_hermes.core.system_prompt import PromptInputs, build_system_prompt
        from acp_hermes.core.trust import open_trust

        trust = trust or open_trust(self.runtime, cwd, extra)
        if subagent is None:
            trust.prompt_trusted = trust.trusted
        settings = trust.settings
        memory_block = ""
        if subagent is None:
            provided = self.runtime.memory_providers.start_session(session_id, cwd) if settings.memory.providers else ""
            memory_block = "\n\n".join(part for part in (self.runtime.memory.snapshot().render(), provided) if part)
        return build_system_prompt(
            PromptInputs(
                paths=self.runtime.paths,
                cwd=cwd,
                session_id=session_id,
                now=datetime.now().astimezone(),
                system_message=settings.system_message if subagent is None else None,
                memory_block=memory_block,
                tool_names=self.runtime.tool_names if subagent is None else subagent.tool_names,
                subagent=subagent is not None,
                skills=[(s.info.name, s.info.category, s.info.description, "stale" if s.state == "stale" else "")
                        for s in self.runtime.skills_for(cwd, trust.trusted).statuses()],
                context_file_max_chars=settings.context_file_max_chars,
                additional_directories=extra,
                project_context=trust.trusted,
                project_message=trust.project_message if subagent is None else None,
            )
        )

    # -- ending sessions

    async def close(self, session_id: str) -> None:
        """Stop the session's work and forget it (it stays stored); closing a stored one is harmless."""
        opening = self._opening.get(session_id)
        if opening is not None:
            await opening.wait()
        live = self._live.get(session_id)
        if live is not None and live.subagent is not None:  # it ends with its task; session/cancel stops it
            raise not_for_a_subagent(session_id, live.state.parent_id, CLOSE_THE_PARENT)
        session = self._live.pop(session_id, None)
        if session is None:
            record = await anyio.to_thread.run_sync(self.runtime.db.get_session, session_id)
            if record is None:
                raise SessionNotFoundError(session_id)
            if record.subagent_label is not None:
                raise not_for_a_subagent(session_id, record.parent_session_id, CLOSE_THE_PARENT)
            return
        session.close(end_hooks=False)
        await session.services.hooks.end()  # the user's SessionEnd hooks (bounded by their timeouts)

    async def delete(self, session_id: str) -> None:
        """Close the session and delete it with every segment compaction made of it."""
        opening = self._opening.get(session_id)
        if opening is not None:
            await opening.wait()
        live = self._live.get(session_id)
        if live is not None and live.subagent is not None:
            raise not_for_a_subagent(session_id, live.state.parent_id, DELETE_THE_PARENT)
        session = self._live.pop(session_id, None)
        if session is not None:
            session.close()
        if not await anyio.to_thread.run_sync(self._delete_stored, session_id) and session is None:
            raise SessionNotFoundError(session_id)

    def _delete_stored(self, session_id: str) -> bool:
        db = self.runtime.db
        record = db.get_session(session_id)
        if record is not None and record.subagent_label is not None:  # its parent's work: deleted with it
            raise not_for_a_subagent(session_id, record.parent_session_id, DELETE_THE_PARENT)
        # Compaction's segments go too, and the sessions of its subagents (their segments included).
        others = [segment.id for segment in db.segments(session_id)[1:]] + db.subagent_ids(session_id)
        deleted = db.delete_session(session_id)
        for other in others:
            db.delete_session(other)
        from acp_hermes.core.checkpoints import forget_sessions

        # And its checkpoints: their copies of the workspace's files are the session's too.
        for problem in forget_sessions(self.runtime.paths.checkpoints, [session_id, *others])[1]:
            log.warning("session %s deleted, but %s", session_id, problem)
        return deleted

    def close_all(self) -> list[Session]:
        """The client is gone: close every live session now, and each one still being built once it is."""
        self._closing = True
        sessions = self.live()
        for session in sessions:
            session.close()
        return sessions

    async def wait_built(self) -> None:
        """Return once no session is being built (at shutdown: each one stores what it has, then closes)."""
        while self._opening:
            await next(iter(self._opening.values())).wait()
