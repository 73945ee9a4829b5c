"""The ACP handlers: decode requests, route them to sessions, encode answers.

``HermesAgent`` implements the SDK's ``acp.interfaces.Agent`` protocol (mypy checks it where
``serve`` hands it to the SDK) without subclassing it: the protocol's bodies are no-ops, so a method
dropped here would answer a silent success instead of an error. Its answers are the SDK's response
models; those built as JSON (``adapter.handshake``, ``adapter.options``) keep their bytes on the wire
(``adapter.answers``). Notifications are plain JSON shaped exactly as the official schema (checked
in the tests). Handlers raise the core's errors; ``errors.translated`` turns them into JSON-RPC errors.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
from acp.schema import (
    AuthenticateResponse,
    CloseSessionResponse,
    PromptResponse,
    SetSessionModeResponse,
)

from acp_hermes.adapter import extensions, rewind, steering, timeline, trust
from acp_hermes.adapter.answers import (
    ForkSessionAnswer,
    InitializeAnswer,
    ListSessionsAnswer,
    LoadSessionAnswer,
    NewSessionAnswer,
    ResumeSessionAnswer,
    SetConfigOptionAnswer,
)
from acp_hermes.adapter.client import (
    AIR_ASYNC_TASKS,
    AIR_FILE_CHANGE_REPORT,
    ClientAbilities,
    ClientEditor,
    ClientLink,
    ClientView,
    PermissionRequests,
    SessionUpdates,
    air_capabilities,
    session_capability,
    shows_subagents,
)
from acp_hermes.adapter.errors import AuthRequired, translated
from acp_hermes.adapter.handshake import (
    AUTH_METHOD_KEY,
    AUTH_METHOD_SETUP,
    Answered,
    auth_methods,
    initialize_result,
    new_session_result,
    no_nul,
    workspace,
)
from acp_hermes.adapter.launchers import LaunchScripts
from acp_hermes.adapter.mcp_servers import specs_from_acp
from acp_hermes.adapter.options import available_commands_update, choices_state, config_options
from acp_hermes.adapter.prompt_blocks import to_parts
from acp_hermes.adapter.render import file_change_report, quota_exceeded, render_update
from acp_hermes.adapter.sdk import (
    handle_quietly,
    json_rpc_engine,
    observe_request,
    route_request,
    route_session_delete,
)
from acp_hermes.config import ConfigError, Settings, home_problem, load_settings
from acp_hermes.core.choices import MODE_OPTION, MODEL_OPTION
from acp_hermes.core.commands import Handled, handle, menu
from acp_hermes.core.errors import InvalidInput, SessionCreationFailed, SessionNotFoundError
from acp_hermes.core.events import AgentText
from acp_hermes.core.runtime import Runtime
from acp_hermes.core.session import Session
from acp_hermes.core.sessions import NewSession, SessionManager, SessionWiring
from acp_hermes.core.turn_report import TurnReport, watching

if TYPE_CHECKING:
    from acp.connection import Connection
    from acp.interfaces import Client
    from acp.schema import (
        AcpMcpServer,
        AudioContentBlock,
        ClientCapabilities,
        EmbeddedResourceContentBlock,
        ForkSessionResponse,
        HttpMcpServer,
        ImageContentBlock,
        Implementation,
        InitializeResponse,
        ListSessionsResponse,
        LoadSessionResponse,
        McpServerStdio,
        NewSessionResponse,
        ResourceContentBlock,
        ResumeSessionResponse,
        SetSessionConfigOptionResponse,
        SseMcpServer,
        TextContentBlock,
    )

    from acp_hermes.adapter.wire import StdioTransport
    from acp_hermes.core.user_prompt import PromptPart
    from acp_hermes_memory.session_db import MessageRecord

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0  # for the last turns and titles to store what they have
SKILLS_POLL_SECONDS = 3.0  # how soon an idle session's / menu shows a skill changed elsewhere
FOLLOWS_THE_PARENT = "its mode, model and thinking follow its parent's; change them there"

# The servers a session is given, as the SDK declares them.
McpServers: TypeAlias = "list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio] | None"


class HermesAgent:
    """Handlers for every ACP method acp-hermes supports."""

    def __init__(self, runtime: Runtime, config_error: str | None = None) -> None:
        self._paths = runtime.paths
        self._config_error = config_error
        self.runtime = runtime
        self._abilities = ClientAbilities()
        self._link: ClientLink | None = None
        self._manager: SessionManager | None = None
        self._menus: dict[str, tuple[tuple[str, str], ...]] = {}  # the / menu each session was last sent
        self._watching_skills = False
        self._tended_checkpoints = False
        self._terminal_auth = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._shows_subagents = False  # set from initialize's raw capabilities
        self._raw_abilities: tuple[bool, bool, frozenset[str]] = (False, False, frozenset())  # notices, quotas, AIR

    # -- plumbing

    def on_connect(self, conn: Client) -> None:
        engine = json_rpc_engine(conn)
        link = self._link = ClientLink(engine)
        # One view per session, shared by its sink, asker and editor; it lives as long as they do.
        views: weakref.WeakValueDictionary[str, ClientView] = weakref.WeakValueDictionary()
        launchers = LaunchScripts(self._paths.own / "terminals")  # in the agent's home: out of every sandbox's reach

        def view(sid: str) -> ClientView:
            found = views.get(sid)
            if found is None:
                found = views[sid] = ClientView()
            return found

        self._manager = SessionManager(
            self.runtime,
            SessionWiring(
                sink_for=lambda sid: SessionUpdates(
                    link, sid, view(sid), subagents=self._abilities.subagents, notices=self._abilities.notices,
                    quotas=self._abilities.quotas, tasks=AIR_ASYNC_TASKS in self._abilities.air),
                asker_for=lambda sid: PermissionRequests(link, sid, view(sid), self._abilities),
                editor_for=lambda sid: ClientEditor(link, sid, self._abilities, view(sid), launchers),
                opened=self._opened,
            ),
            self.spawn,
        )
        route_session_delete(engine, self.delete_session)
        route_request(engine, extensions.QUOTA_READ_METHOD, self.read_quotas)
        observe_request(engine, "initialize", self._raw_initialize)
        observe_request(engine, "session/prompt", _raw_prompt)
        observe_request(engine, "session/fork", _raw_fork)
        route_request(engine, timeline.REWIND_METHOD, self.rewind_session)
        route_request(engine, timeline.EDIT_PROMPT_METHOD, self.edit_prompt)
        for method in (trust.STATUS_METHOD, trust.DECISION_METHOD):  # as the clients spell them, no "_"
            route_request(engine, method, functools.partial(self.ext_method, method))

    def _raw_initialize(self, params: dict[str, Any]) -> None:
        """What the SDK's model of the client's capabilities leaves out: ``subagents`` and
        ``session.notices`` (unstable), ``session.quotas`` and AIR's ``_meta`` (extensions)."""
        capabilities = params.get("clientCapabilities")
        self._shows_subagents = shows_subagents(capabilities)
        self._raw_abilities = (session_capability(capabilities, "notices"),
                               session_capability(capabilities, "quotas"), air_capabilities(capabilities))

    @property
    def manager(self) -> SessionManager:
        assert self._manager is not None, "on_connect has not run"
        return self._manager

    @property
    def link(self) -> ClientLink:
        assert self._link is not None, "on_connect has not run"
        return self._link

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` after the current handler's response has been written.

        The SDK writes a response synchronously once the handler returns, and a new task
        only starts on the next loop iteration, so notifications sent from here follow it.
        """
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def _session(self, session_id: str, instead: str) -> Session:
        """The session a request drives, once it is ready; a subagent's is refused, saying ``instead``."""
        return await self.manager.get_for_client(session_id, instead)

    def _settings(self) -> Settings:
        return self.runtime.settings

    # -- initialize and auth

    def auth_methods(self) -> list[dict[str, Any]]:
        return auth_methods(self._terminal_auth)

    @translated
    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        caps = _plain(client_capabilities)
        fs = _plain(caps.get("fs"))
        self._abilities = ClientAbilities(
            read_files=bool(fs.get("readTextFile")),
            write_files=bool(fs.get("writeTextFile")),
            terminals=bool(caps.get("terminal")),
            forms=_plain(caps.get("elicitation")).get("form") is not None,  # `{}` advertises forms
            subagents=self._shows_subagents,
            notices=self._raw_abilities[0],
            quotas=self._raw_abilities[1],
            air=self._raw_abilities[2],
            workspace_trust=trust.advertised(caps),
        )
        self._terminal_auth = bool(_plain(caps.get("auth")).get("terminal"))
        name = getattr(client_info, "name", None) or "unknown client"
        log.info("initialize from %s (protocol %s): %s", name, protocol_version, self._abilities)
        return InitializeAnswer.of(initialize_result(self._terminal_auth))

    def _reload_settings(self) -> None:
        if (problem := home_problem(self._paths)) is not None:  # it would fail whatever came next
            self._config_error = problem
            return
        try:
            self.runtime.settings = load_settings(paths=self._paths)
            self._config_error = None
        except ConfigError as exc:
            self._config_error = str(exc)

    def _require_ready(self) -> None:
        """Configuration must be valid and an API key present before a session starts."""
        if self._config_error is not None or not self._settings().has_api_key:
            self._reload_settings()
        if self._config_error is not None:
            raise ConfigError(self._config_error)
        if not self._settings().has_api_key:
            raise AuthRequired("No Anthropic API key: set ANTHROPIC_API_KEY or run `acp-hermes setup`.",
                               self.auth_methods())

    @translated
    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id not in (AUTH_METHOD_KEY, AUTH_METHOD_SETUP):
            raise InvalidInput(f"unknown auth method {method_id!r}")
        self._require_ready()
        return AuthenticateResponse()

    # -- session lifecycle

    async def _session_state(self, session: Session) -> dict[str, Any]:
        """What load, resume and fork answer of a session: its modes and options, and for a client with
        its own trust dialog the workspace's standing."""
        state = choices_state(session.choices, session.services.settings)
        if self._abilities.workspace_trust:
            state["_meta"] = await trust.session_meta(self.runtime, session.services.trust, session.state.cwd)
        return state

    def _opened(self, session: Session) -> None:
        """What a client expects right after a session appears: commands, usage; warm imports.
        The manager calls it once the session is built (and its MCP servers are starting)."""

        async def announce() -> None:
            await self._announce_menu(session, force=True)
            await session.report_usage()

        self.spawn(announce())
        self.spawn(anyio.to_thread.run_sync(self.runtime.warm_up))
        if not self._watching_skills:
            self._watching_skills = True
            self.spawn(self._watch_skills())
        if not self._tended_checkpoints and self.runtime.settings.checkpoints.enabled:
            self._tended_checkpoints = True  # once per process, beside the first session
            self.spawn(anyio.to_thread.run_sync(self.runtime.tend_checkpoints))

    async def _watch_skills(self) -> None:
        """Tell editors of idle sessions when skills change on disk (another process, a hand edit)."""
        while True:
            await anyio.sleep(SKILLS_POLL_SECONDS)
            for session in self.manager.live():
                store = session.services.tools.services.skills
                if store is not None and not await anyio.to_thread.run_sync(store.unchanged):
                    await self._announce_menu(session)

    async def _announce_menu(self, session: Session, *, force: bool = False) -> None:
        """Send the ``/`` menu when it changed (a skill created, deleted or renamed, here or elsewhere)."""
        entries = await anyio.to_thread.run_sync(menu, session)
        names = tuple((entry.name, entry.description) for entry in entries)
        if force or self._menus.get(session.id) != names:
            self._menus[session.id] = names
            await self.link.update(session.id, available_commands_update(entries))

    @translated
    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: McpServers = None, **kwargs: Any) -> NewSessionResponse:
        root, extra = workspace(cwd, additional_directories)
        self._require_ready()
        # The answer does not wait for the session: building it means reading SOUL.md, memory and
        # context files, scanning them for injection and storing the frozen system prompt (tens of
        # ms with a big AGENTS.md). The manager builds it just after; requests on it wait for that.
        new = self.manager.create_soon(root, extra, mcp_servers=lambda: specs_from_acp(mcp_servers),
                                       announced=_ANNOUNCED.get())
        from acp_hermes.core.trust import starting_settings

        result = new_session_result(new.id, new.choices, starting_settings(self.runtime, root))
        if self._abilities.workspace_trust:
            result["_meta"] = await trust.session_meta(self.runtime, None, root)
        return NewSessionAnswer.of(result)

    @translated
    async def load_session(self, cwd: str, session_id: str, mcp_servers: McpServers = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        root, extra = workspace(cwd, additional_directories)
        self._require_ready()
        # The manager reads the rows once, off the event loop, for both the history and the replay.
        session, _ = await self.manager.restore(session_id, root, extra, mcp_servers=specs_from_acp(mcp_servers),
                                                show=self._replay)
        return LoadSessionAnswer.of(await self._session_state(session))

    async def _replay(self, session: Session, rows: Sequence[MessageRecord]) -> None:
        """What session/load shows of a restored session before anything else: its history, its title."""
        from acp_hermes.adapter.replay import replay_updates

        await self.link.updates(session.id, replay_updates(rows))
        if session.title:
            await self.link.update(session.id, {"sessionUpdate": "session_info_update", "title": session.title})

    @translated
    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: McpServers = None, **kwargs: Any) -> ResumeSessionResponse:
        root, extra = workspace(cwd, additional_directories)
        self._require_ready()
        session, _ = await self.manager.restore(session_id, root, extra, mcp_servers=specs_from_acp(mcp_servers))
        return ResumeSessionAnswer.of(await self._session_state(session))

    @translated
    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: McpServers = None, **kwargs: Any) -> ForkSessionResponse:
        at = timeline.fork_point(_FORK_PARAMS.get() or {})  # the SDK's model drops messageId: read the raw params
        root, extra = workspace(cwd, additional_directories)
        self._require_ready()
        forked = await self.manager.fork(session_id, root, extra, mcp_servers=specs_from_acp(mcp_servers), at=at)
        if forked.title:
            self.spawn(self.link.update(forked.session_id, {"sessionUpdate": "session_info_update",
                                                            "title": forked.title}))
        from acp_hermes.core.trust import starting_settings

        # Answered before the fork is built: its workspace's standing as a session there finds it.
        settings = starting_settings(self.runtime, root)
        result = {"sessionId": forked.session_id, **choices_state(forked.choices, settings),
                  **timeline.fork_meta(forked.rollback)}
        if self._abilities.workspace_trust:
            result.setdefault("_meta", {}).update(await trust.session_meta(self.runtime, None, root))
        return ForkSessionAnswer.of(result)

    @translated
    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        await self.manager.close(session_id)
        return CloseSessionResponse()

    @translated
    async def delete_session(self, session_id: str) -> dict[str, Any]:
        await self.manager.delete(session_id)
        return {}

    @translated
    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        if cwd is not None:
            no_nul(cwd, "cwd")
            if not Path(cwd).is_absolute():
                raise InvalidInput(f"cwd must be absolute, got {cwd!r}")
        try:
            records, next_cursor = self.runtime.db.list_sessions(
                cwd=str(Path(cwd).resolve()) if cwd else None, cursor=cursor
            )
        except ValueError as exc:
            raise InvalidInput(f"invalid cursor: {exc}") from None
        from acp_hermes.adapter.replay import session_info

        result: dict[str, Any] = {"sessions": [session_info(record) for record in records]}
        if next_cursor:
            result["nextCursor"] = next_cursor
        return ListSessionsAnswer.of(result)

    # -- choices

    async def _announce_choice(self, session: Session, option_id: str) -> None:
        """Tell the client about a change it did not make itself (the other view of the mode, or a
        slash command's change)."""
        options = config_options(session.choices, session.services.settings)
        await self.link.update(session.id, {"sessionUpdate": "config_option_update", "configOptions": options})
        if option_id == MODE_OPTION:
            await self.link.update(session.id, {"sessionUpdate": "current_mode_update",
                                                "currentModeId": session.choices.mode.value})

    @translated
    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        session = await self._session(session_id, FOLLOWS_THE_PARENT)
        session.set_choice(config_id, value)
        if config_id == MODE_OPTION:
            self.spawn(self.link.update(session.id, {"sessionUpdate": "current_mode_update",
                                                     "currentModeId": session.choices.mode.value}))
        return SetConfigOptionAnswer.of({"configOptions": config_options(session.choices, session.services.settings)})

    @translated
    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = await self._session(session_id, FOLLOWS_THE_PARENT)
        session.set_choice(MODE_OPTION, mode_id)
        options = config_options(session.choices, session.services.settings)
        self.spawn(self.link.update(session.id, {"sessionUpdate": "config_option_update", "configOptions": options}))
        return SetSessionModeResponse()

    # -- turns

    @translated
    async def prompt(self, session_id: str,
                     prompt: list[TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock
                                  | EmbeddedResourceContentBlock], **kwargs: Any) -> PromptResponse:
        session = await self._session(session_id, "it takes no prompts; prompt its parent")
        blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in prompt]
        return await self._run_prompt(session, blocks, _PROMPT_MESSAGE_ID.get(), _FILE_REPORT.get())

    async def _run_prompt(self, session: Session, blocks: list[dict[str, Any]],
                          message_id: str | None, file_report: str | None = None) -> PromptResponse:
        """A prompt's blocks run as a prompt (``session/prompt``, an edited prompt): its answer."""
        for number, block in enumerate(blocks):
            uri = block.get("uri") or (block.get("resource") or {}).get("uri")
            if isinstance(uri, str):
                no_nul(uri, f"prompt[{number}].uri")
        # The core decides what the parts are (a slash command, a skill, a model turn) and runs it.
        handled: Handled | None = None
        file_report = file_report if AIR_FILE_CHANGE_REPORT in self._abilities.air else None
        report = TurnReport(wants_files=file_report is not None)
        before = (session.choices.model, session.choices.thought_level)
        try:
            with watching(report):
                handled = await handle(session, to_parts(blocks), message_id)
        finally:  # after the answer: a turn (or a trust decision before it, or /trust) may have changed skills
            self.spawn(self._announce_menu(session))
        changed = handled.reply.changed_option if handled.reply is not None else None
        if changed is None and before != (session.choices.model, session.choices.thought_level):
            changed = MODEL_OPTION  # a trusted project's model or thinking level became the session's
        if changed is not None:
            await self._announce_choice(session, changed)
        if handled.reply is not None:  # a slash command's reply, stored already
            await self.link.update(session.id, render_update(AgentText(handled.message_id, handled.reply.text)))
        if file_report is not None:  # AIR: before the answer, what the turn changed (its checkpoints)
            await self.link.update(session.id, file_change_report(file_report, report.changed if report.ran else ()))
        if report.exceeded is not None and self._abilities.quotas:
            from acp import RequestError

            raise RequestError(*quota_exceeded(report.exceeded))
        return PromptResponse(stop_reason=handled.stop_reason)

    @translated
    async def read_quotas(self, params: dict[str, Any]) -> dict[str, Any]:
        """``quota/read {sessionId}``: the session's quotas as they stand (the API's limits as its last
        response stated them, the budgets as spent)."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            from acp import RequestError

            raise RequestError.invalid_params({"sessionId": "required: the session's id"})
        session = await self._session(session_id, "read its parent's quotas")
        return extensions.quota_read_result(session.services.quotas.pools())

    @translated
    async def rewind_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """``session/rewind`` (Session Rewind v2): the conversation keeps that message and all before it."""
        session = await self._session(rewind.session_id_of(params), "rewind its parent")
        result, truncated = await timeline.rewind(session, params)
        await self.link.update(session.id, truncated)
        return result

    @translated
    async def edit_prompt(self, params: dict[str, Any]) -> PromptResponse:
        """``session/edit_prompt`` (Session Rewind v2): back to just before that prompt, then the edited
        prompt runs as a new turn under the same id; answered as ``session/prompt`` is."""
        session = await self._session(rewind.session_id_of(params), "it takes no prompts; prompt its parent")
        message_id, blocks, truncated = await timeline.cut_for_edit(session, params)
        await self.link.update(session.id, truncated)
        return await self._run_prompt(session, blocks, message_id)

    @translated
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Extension requests (the name without its leading ``_``): the rewind (``adapter.rewind``),
        steering (``adapter.steering``), workspace trust (``adapter.trust``) and AIR's task stop
        (``adapter.extensions``)."""
        if method == trust.STATUS_METHOD:
            return await trust.status(self.runtime, self.manager, params)
        if method == trust.DECISION_METHOD:
            return await trust.decision(self.runtime, self.manager, params, self._trust_changed)
        if method not in (rewind.POINTS_METHOD, rewind.REWIND_METHOD, steering.METHOD, extensions.TASK_STOP_METHOD):
            from acp import RequestError

            raise RequestError.method_not_found(f"_{method}")
        instead = "steer its parent" if method == steering.METHOD else "rewind its parent"
        session = await self._session(rewind.session_id_of(params), instead)
        if method == extensions.TASK_STOP_METHOD:
            return await self._stop_task(session, params)
        if method == steering.METHOD:
            return await steering.steer(session, params, self._start_turn)
        if method == rewind.POINTS_METHOD:
            return await rewind.points(session, params)
        return await rewind.rewind_to(session, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications (the name without its leading ``_``): acp-hermes defines none, and
        a notification gets no answer, so an unknown one is ignored, as the protocol asks."""
        log.debug("extension notification _%s ignored", method)

    async def _stop_task(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        """AIR's ``_session/async_task/stop {sessionId, asyncTaskId}``: ``{stopped}``, false for a task
        that is not running (ended already, or never one of this session's)."""
        from acp_hermes.core.async_tasks import stop_task

        task_id = params.get("asyncTaskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidInput("asyncTaskId: required, the id of a task this session announced")
        return {"stopped": await stop_task(session, task_id)}

    async def _trust_changed(self, session: Session) -> None:
        """A trust decision from the client applied to ``session``: its menu (skills) and options (a
        project's model) as they are now."""
        await self._announce_menu(session)
        await self._announce_choice(session, MODEL_OPTION)

    def _start_turn(self, session: Session, parts: Sequence[PromptPart]) -> None:
        """A turn nobody's request awaits (a steer that found the session idle): it streams as any turn."""

        async def run() -> None:
            try:
                handled = await handle(session, list(parts))
                if handled.reply is not None:  # the words were a slash command: show its reply
                    await self.link.update(session.id, render_update(AgentText(handled.message_id,
                                                                               handled.reply.text)))
            finally:
                await self._announce_menu(session)

        self.spawn(run())

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        try:
            session = await self.manager.get(session_id)  # one still being built: once it is
        except (SessionNotFoundError, SessionCreationFailed):
            log.warning("session/cancel for unknown session %s ignored", session_id)
            return
        session.cancel()

    async def adopt(self, engine: Connection, answered: Sequence[Answered]) -> None:
        """Serve, without answering again, what ``adapter.reception`` answered before the SDK was
        loaded: each request through the SDK's model and these handlers, in order, so that the
        state they keep (the client's abilities, the sessions it was told of, under the ids it was
        given) is as if they had answered it. An answer that would have differed, or a failure, is a
        bug in the reception's checks: logged, and a session that could not be begun says so."""
        for early in answered:
            announced = None if early.session is None else NewSession(*early.session)
            token = _ANNOUNCED.set(announced)
            try:
                result = await handle_quietly(engine, early.method, early.params)
            except Exception as exc:
                log.error("%s was answered before the SDK loaded, yet fails through it: %r", early.method, exc)
                if announced is not None:
                    self.manager.could_not_create(announced.id, f"{type(exc).__name__}: {exc}")
                continue
            finally:
                _ANNOUNCED.reset(token)
            if result != early.result:
                log.error("%s was answered before the SDK loaded with %r; its handler answers %r",
                          early.method, early.result, result)

    def client_gone(self) -> None:
        """The editor closed stdin: nobody is left to watch the running turns, so stop them now."""
        if self._manager is not None:
            self._manager.close_all()

    async def shutdown(self) -> None:
        """Stop every turn and background task, let each store what it has, then close the stores."""
        sessions = self._manager.close_all() if self._manager is not None else []
        with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS):
            if self._manager is not None:
                await self._manager.wait_built()  # a session/new just answered: its row is stored whole
            for session in sessions:
                await session.wait_until_idle()
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # a cancelled task finishes its DB write first
        await self.runtime.aclose()


# The client's ``messageId`` of the prompt being handled (the SDK's model of the request drops it).
_PROMPT_MESSAGE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("prompt_message_id", default=None)
# The raw params of the session/fork being handled (the SDK's model drops messageId and keeps _meta apart).
_FORK_PARAMS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("fork_params", default=None)
# The id and choices of a session/new the reception answered, while ``adopt`` serves it.
_ANNOUNCED: contextvars.ContextVar[NewSession | None] = contextvars.ContextVar("announced_session", default=None)


# AIR's ``agentFileChangeReportRequest`` of the prompt being handled: its requestId.
_FILE_REPORT: contextvars.ContextVar[str | None] = contextvars.ContextVar("file_change_report", default=None)


def _raw_prompt(params: dict[str, Any]) -> None:
    message_id = params.get("messageId")
    _PROMPT_MESSAGE_ID.set(message_id if isinstance(message_id, str) and message_id else None)
    _FILE_REPORT.set(extensions.file_report_request(params))


def _raw_fork(params: dict[str, Any]) -> None:
    _FORK_PARAMS.set(params)


def _plain(value: Any) -> dict[str, Any]:
    """A model or a mapping as a plain dict ({} for anything else): the SDK salvages an invalid
    capability object into a default dict rather than a model."""
    if hasattr(value, "model_dump"):
        dumped: dict[str, Any] = value.model_dump(by_alias=True)
        return dumped
    return value if isinstance(value, dict) else {}


async def serve(agent: HermesAgent, transport: StdioTransport, answered: Sequence[Answered] = (), *,
                listen: bool = True) -> None:
    """Serve ACP on ``transport`` until stdin closes: first adopt what the reception answered, then
    every request from where it stopped reading (``StdioTransport.hand_back``). Without ``listen``
    (stopped before it could serve) only adopt, then shut down: announced sessions are stored."""
    from acp.agent.connection import AgentSideConnection

    transport.on_eof = agent.client_gone
    connection = AgentSideConnection(agent, transport, listening=False, use_unstable_protocol=True)
    try:
        await agent.adopt(json_rpc_engine(connection), answered)
        if listen:
            await connection.listen()
        else:
            agent.client_gone()
    finally:
        await agent.shutdown()
        await connection.close()
