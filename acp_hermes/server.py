"""The ACP adapter: decode requests, route them to sessions, encode answers.

A plain class (not a subclass of ``acp.Agent``), so every method it does not define answers
``-32601 Method not found`` instead of a silent success. Responses and notifications are
plain JSON shaped exactly as the official schema (checked in the tests).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from collections.abc import Coroutine, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError

from acp_hermes import __version__
from acp_hermes.config import ConfigError, Paths, Settings, load_settings
from acp_hermes.editor import ClientAbilities
from acp_hermes.events import Display, Event, ToolKind
from acp_hermes.options import InvalidOption, SessionChoices, config_options, session_modes
from acp_hermes.render import render_update, tool_content
from acp_hermes.session import Runtime, Session, SessionFactoryArgs, SessionManager, SessionNotFoundError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from acp.connection import Connection

    from acp_hermes.wire import StdioTransport
    from memory.session_db import SessionDB
    from tools.registry import ToolContext

log = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002
INTERNAL_ERROR = -32603
AUTH_METHOD_KEY = "anthropic-api-key"
AUTH_METHOD_SETUP = "acp-hermes-setup"


def not_found(session_id: str) -> RequestError:
    return RequestError(RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": session_id,
                                                                  "details": f"no session {session_id!r}"})


def invalid_params(details: str) -> RequestError:
    return RequestError.invalid_params({"details": details})


class ClientLink:
    """Raw JSON-RPC to the client over the SDK's connection (plain dicts in and out)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self._connection.send_request(method, params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._connection.send_notification(method, params)

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.notify("session/update", {"sessionId": session_id, "update": update})

    async def updates(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        """Many ``session/update``s in a few large writes (a session/load replays thousands)."""
        transport: StdioTransport = self._connection._transport  # ours, from cli._serve (pinned SDK)
        await transport.send_notifications(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
            for update in updates
        )


class SessionUpdates:
    """The event sink of one session: every loop event becomes a ``session/update``."""

    def __init__(self, link: ClientLink, session_id: str) -> None:
        self._link = link
        self._session_id = session_id

    async def emit(self, event: Event) -> None:
        try:
            await self._link.update(self._session_id, render_update(event))
        except ConnectionError:
            log.debug("client gone; dropped %s", type(event).__name__)


class PermissionRequests:
    """Asks the user through ``session/request_permission`` (same toolCallId as the call)."""

    def __init__(self, link: ClientLink, session_id: str) -> None:
        self._link = link
        self._session_id = session_id

    async def ask(
        self,
        ctx: ToolContext,
        *,
        title: str,
        kind: ToolKind,
        display: Sequence[Display],
        options: list[dict[str, str]],
    ) -> str:
        params = {
            "sessionId": self._session_id,
            "toolCall": {
                "toolCallId": ctx.call_id,
                "title": title,
                "kind": kind,
                "status": "pending",
                "content": [tool_content(item) for item in display],
            },
            "options": options,
        }
        try:
            result = await self._link.request("session/request_permission", params)
        except (RequestError, ConnectionError) as exc:
            log.warning("permission request failed (%s); treating it as cancelled", exc)
            return "cancelled"
        outcome = (result or {}).get("outcome") or {}
        if outcome.get("outcome") == "selected":
            return str(outcome.get("optionId", ""))
        return "cancelled"


class HermesAgent:
    """Handlers for every ACP method acp-hermes supports."""

    def __init__(self, paths: Paths, settings: Settings | None, config_error: str | None = None,
                 db_opening: Future[SessionDB] | None = None) -> None:
        self._paths = paths
        self._config_error = config_error
        self.runtime = Runtime(settings or Settings(), paths, db_opening=db_opening)
        self._link: ClientLink | None = None
        self._manager: SessionManager | None = None
        self._terminal_auth = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._failed_creations: dict[str, str] = {}  # session/new answered, but storing the session failed

    # -- plumbing

    def on_connect(self, conn: Any) -> None:
        connection: Connection = conn._conn  # the SDK's JSON-RPC engine (pinned SDK version)
        self._link = ClientLink(connection)
        link = self._link
        self._manager = SessionManager(
            self.runtime,
            SessionFactoryArgs(
                client=link,
                sink_for=lambda sid: SessionUpdates(link, sid),
                asker_for=lambda sid: PermissionRequests(link, sid),
            ),
        )
        from acp_hermes.routes import install_extra_routes

        install_extra_routes(connection, self)

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

    def _session(self, session_id: str) -> Session:
        try:
            return self.manager.get(session_id)
        except SessionNotFoundError:
            failure = self._failed_creations.get(session_id)
            if failure is not None:
                raise RequestError(INTERNAL_ERROR, f"session {session_id} could not be created: {failure}",
                                   {"sessionId": session_id, "details": failure}) from None
            raise not_found(session_id) from None

    def _settings(self) -> Settings:
        return self.runtime.settings

    # -- initialize and auth

    def auth_methods(self) -> list[dict[str, Any]]:
        methods: list[dict[str, Any]] = [
            {
                "id": AUTH_METHOD_KEY,
                "name": "Anthropic API key",
                "description": "Set ANTHROPIC_API_KEY in the agent's environment, or run `acp-hermes setup` "
                "in a terminal to save a key, then authenticate.",
                "_meta": {"terminal-auth": {"command": sys.executable, "args": ["-m", "acp_hermes", "setup"],
                                            "label": "acp-hermes setup"}},
            }
        ]
        if self._terminal_auth:
            methods.append(
                {
                    "id": AUTH_METHOD_SETUP,
                    "name": "Set up acp-hermes",
                    "description": "Enter an Anthropic API key, base URL and model in a terminal.",
                    "type": "terminal",
                    "args": ["setup"],
                }
            )
        return methods

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> dict[str, Any]:
        caps = client_capabilities.model_dump(by_alias=True) if client_capabilities is not None else {}
        fs = caps.get("fs") or {}
        self.runtime.abilities = ClientAbilities(
            read_files=bool(fs.get("readTextFile")),
            write_files=bool(fs.get("writeTextFile")),
            terminals=bool(caps.get("terminal")),
        )
        self._terminal_auth = bool((caps.get("auth") or {}).get("terminal"))
        name = getattr(client_info, "name", None) or "unknown client"
        log.info("initialize from %s (protocol %s): %s", name, protocol_version, self.runtime.abilities)
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {
                    "list": {},
                    "resume": {},
                    "close": {},
                    "delete": {},
                    "additionalDirectories": {},
                    "fork": {},  # unstable in ACP v1; served with the SDK's unstable routes enabled
                },
                "_meta": {"acp-hermes": {"promptQueueing": True}},
            },
            "authMethods": self.auth_methods(),
            "agentInfo": {"name": "acp-hermes", "title": "acp-hermes (Hermes Agent for editors)",
                          "version": __version__},
        }

    def _reload_settings(self) -> None:
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
            message = f"acp-hermes configuration error: {self._config_error}"  # clients show the message
            raise RequestError(INTERNAL_ERROR, message, {"details": message})
        if not self._settings().has_api_key:
            raise RequestError.auth_required(
                {"details": "No Anthropic API key: set ANTHROPIC_API_KEY or run `acp-hermes setup`.",
                 "authMethods": self.auth_methods()}
            )

    async def authenticate(self, method_id: str, **kwargs: Any) -> dict[str, Any]:
        if method_id not in (AUTH_METHOD_KEY, AUTH_METHOD_SETUP):
            raise invalid_params(f"unknown auth method {method_id!r}")
        self._require_ready()
        return {}

    # -- session lifecycle

    @staticmethod
    def _workspace(cwd: str, additional: list[str] | None) -> tuple[Path, tuple[Path, ...]]:
        paths = []
        for raw in (cwd, *(additional or [])):
            if not raw or not Path(raw).is_absolute():
                raise invalid_params(f"workspace paths must be absolute, got {raw!r}")
            path = Path(raw).resolve()
            if not path.is_dir():
                raise invalid_params(f"workspace directory {raw!r} does not exist")
            paths.append(path)
        return paths[0], tuple(paths[1:])

    def _session_state(self, session: Session) -> dict[str, Any]:
        return self._choices_state(session.choices)

    def _choices_state(self, choices: SessionChoices) -> dict[str, Any]:
        return {
            "modes": session_modes(choices),
            "configOptions": config_options(choices, self._settings()),
        }

    def _after_open(self, session: Session) -> None:
        """What a client expects right after a session appears: commands, usage; warm imports."""
        session.on_first_exchange = self._name_session

        async def announce() -> None:
            from acp_hermes.commands import available_commands_update

            await self.link.update(session.id, available_commands_update())
            await session.report_usage()

        self.spawn(announce())
        self.spawn(_warm_up())

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        root, extra = self._workspace(cwd, additional_directories)
        self._require_ready()
        if mcp_servers:
            log.info("ignoring %d MCP server(s): MCP is not supported yet", len(mcp_servers))
        self.runtime.db  # noqa: B018  opened now, so a database that cannot be opened fails session/new itself
        session_id = str(uuid.uuid4())
        self.spawn(self._create(session_id, root, extra))
        return {"sessionId": session_id, **self._choices_state(self.manager.new_choices())}

    async def _create(self, session_id: str, root: Path, extra: tuple[Path, ...]) -> None:
        """Build and store a new session just after session/new has answered.

        Building means reading SOUL.md, memory and context files, scanning them for injection
        and storing the frozen system prompt (tens of ms with a big AGENTS.md): none of that has
        to delay the answer. This coroutine never awaits, so it runs whole, before the handler of
        any request that comes after session/new: every such request finds the session ready.
        """
        try:
            session = self.manager.create(root, extra, session_id)
        except Exception as exc:
            log.exception("session %s could not be created in %s", session_id, root)
            self._failed_creations[session_id] = f"{type(exc).__name__}: {exc}"
            return
        log.info("session %s created in %s", session.id, root)
        self._after_open(session)

    def _restore(self, session_id: str, cwd: str, additional: list[str] | None) -> Session:
        root, extra = self._workspace(cwd, additional)
        self._require_ready()
        try:
            return self.manager.restore(session_id, root, extra)
        except SessionNotFoundError:
            raise not_found(session_id) from None

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        root, extra = self._workspace(cwd, additional_directories)
        self._require_ready()
        # One read serves both the history and the replay (5,000 messages take ~0.1 s to read),
        # and it runs off the event loop so other sessions keep streaming meanwhile.
        rows = await anyio.to_thread.run_sync(self.runtime.db.messages, session_id)
        try:
            session = self.manager.restore(session_id, root, extra, rows)
        except SessionNotFoundError:
            raise not_found(session_id) from None
        from acp_hermes.replay import replay_updates

        await self.link.updates(session.id, replay_updates(rows))
        if session.title:
            await self.link.update(session.id, {"sessionUpdate": "session_info_update", "title": session.title})
        self._after_open(session)
        return self._session_state(session)

    async def resume_session(self, cwd: str, session_id: str, additional_directories: list[str] | None = None,
                             mcp_servers: list[Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        session = self._restore(session_id, cwd, additional_directories)
        self._after_open(session)
        return self._session_state(session)

    async def fork_session(self, cwd: str, session_id: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        root, extra = self._workspace(cwd, additional_directories)
        self._require_ready()
        try:
            session = self.manager.fork(session_id, root, extra)
        except SessionNotFoundError:
            raise not_found(session_id) from None
        self._after_open(session)
        if session.title:
            self.spawn(self.link.update(session.id, {"sessionUpdate": "session_info_update", "title": session.title}))
        return {"sessionId": session.id, **self._session_state(session)}

    async def close_session(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        try:
            self.manager.close(session_id)
        except SessionNotFoundError:
            raise not_found(session_id) from None
        return {}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        try:
            self.manager.delete(session_id)
        except SessionNotFoundError:
            raise not_found(session_id) from None
        return {}

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if cwd is not None and not Path(cwd).is_absolute():
            raise invalid_params(f"cwd must be absolute, got {cwd!r}")
        try:
            records, next_cursor = self.runtime.db.list_sessions(
                cwd=str(Path(cwd).resolve()) if cwd else None, cursor=cursor
            )
        except ValueError as exc:
            raise invalid_params(f"invalid cursor: {exc}") from None
        from acp_hermes.replay import session_info

        result: dict[str, Any] = {"sessions": [session_info(record) for record in records]}
        if next_cursor:
            result["nextCursor"] = next_cursor
        return result

    # -- choices

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kwargs: Any) -> dict[str, Any]:
        session = self._session(session_id)
        mode_before = session.choices.mode
        try:
            session.set_choice(config_id, value)
        except InvalidOption as exc:
            raise invalid_params(str(exc)) from None
        if session.choices.mode is not mode_before:
            self.spawn(self.link.update(session.id, {"sessionUpdate": "current_mode_update",
                                                     "currentModeId": session.choices.mode.value}))
        return {"configOptions": config_options(session.choices, self._settings())}

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> dict[str, Any]:
        session = self._session(session_id)
        try:
            session.set_mode(mode_id)
        except InvalidOption as exc:
            raise invalid_params(str(exc)) from None
        self.spawn(self.link.update(session.id, {"sessionUpdate": "config_option_update",
                                                 "configOptions": config_options(session.choices, self._settings())}))
        return {}

    # -- turns

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> dict[str, Any]:
        session = self._session(session_id)
        blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in prompt]
        from acp_hermes.commands import run_command

        handled = await run_command(session, blocks, self)
        stop = handled if handled is not None else await session.prompt(blocks)
        return {"stopReason": stop}

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        try:
            session = self.manager.get(session_id)
        except SessionNotFoundError:
            log.warning("session/cancel for unknown session %s ignored", session_id)
            return
        session.cancel()

    def _name_session(self, session: Session) -> None:
        from acp_hermes.titles import name_session

        self.spawn(name_session(session, self.runtime))

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self.runtime.aclose()


async def _warm_up() -> None:
    """Import what a turn needs (model SDK, schema validator, loop, tools) off the event loop,
    before the first prompt: none of it is needed to answer initialize or session/new."""

    def load() -> None:
        import anthropic  # noqa: F401
        import jsonschema  # noqa: F401

        import acp_hermes.content
        import acp_hermes.loop
        import acp_hermes.risk  # noqa: F401
        from tools import core_tools

        core_tools()

    await anyio.to_thread.run_sync(load)
