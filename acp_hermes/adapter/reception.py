"""The first requests, answered before the ACP SDK has loaded: the server's entry.

Importing the SDK (its schema of ~280 pydantic models) and the handlers is most of what a start
costs, and an editor's new thread waits for ``initialize`` and ``session/new``. So the reception,
on the event loop, reads the first messages through the same transport (malformed input answered
as ever) and answers those two itself, from what the process knows as it starts (``core.arrival``:
nothing of pydantic's), with the functions the handlers use (``adapter.handshake``),
when their params pass the checks below: at least as strict as the SDK's models, so every request
it answers is one the SDK would accept and read the same way. At the first message it does not
answer — any other method, a check it cannot make, an error to give — it stops reading: that
message and all after it go through the SDK in arrival order once it has loaded, as before. The
SDK and the handlers load on a thread, begun as soon as the reception has nothing to do.

What it answered is then served again by the handlers, through the SDK, without a second answer
(``HermesAgent.adopt``), so the handlers' state is as if they had answered it: the sessions it
announced are made with the ids it gave, and requests on them wait until they are
(``SessionManager.get``), as for any new session.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from types import ModuleType
from typing import TYPE_CHECKING, Any

from acp_hermes.adapter.handshake import Answered, initialize_result, new_session_result, workspace
from acp_hermes.adapter.wire import StdioTransport, open_streams
from acp_hermes.core.arrival import Arrival
from acp_hermes.core.errors import InvalidInput
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.runtime import Runtime

log = logging.getLogger(__name__)

# The SDK loads once the reception has nothing to do: a message it does not answer, the end of
# input, or no message for this long. Loading holds the GIL, so beginning it while a request is
# being answered would only slow the answer down.
IDLE_SECONDS = 0.01
# While the SDK loads, a request the reception answers waits for the GIL each time it takes it back
# (after each read or write): at most this long, instead of Python's default 5 ms (measured with a
# session/new sent 40 ms after initialize: median 20 ms at 5 ms, 16 at 1 ms, 8 at 0.2 ms).
SWITCH_SECONDS = 0.00025
PROTOCOL_VERSIONS = range(0, 65536)  # InitializeRequest.protocolVersion: ge=0, le=65535

Reading = asyncio.Future[dict[str, Any] | None]


@value
class Loaded:
    """The handlers' module, and the runtime they serve with (its settings validated by pydantic)."""

    server: ModuleType
    runtime: Runtime
    config_error: str | None


Loading = asyncio.Future[Loaded]


def _plain_keys(params: dict[str, Any]) -> bool:
    """Whether no key could be a field's Python name: the SDK's models also accept those
    (``populate_by_name``), e.g. ``protocol_version`` for ``protocolVersion``."""
    return all(key == "_meta" or "_" not in key for key in params)


def terminal_auth_of(params: Any) -> bool | None:
    """What the answer to ``initialize`` depends on (the client's ``auth.terminal``), or None when the
    SDK might refuse these params or read that value differently.

    ``InitializeRequest`` refuses a ``protocolVersion`` outside 0–65535 (it turns a string into a
    number first); it salvages every capability it cannot read into its default, and a
    ``positionEncodings`` that is not a list turns all of ``clientCapabilities`` into the default.
    """
    if not isinstance(params, dict) or not _plain_keys(params):
        return None
    version = params.get("protocolVersion")
    if type(version) is not int or version not in PROTOCOL_VERSIONS:
        return None
    capabilities = params.get("clientCapabilities")
    if capabilities is None:
        return False
    if not isinstance(capabilities, dict) or not _plain_keys(capabilities):
        return None
    if not isinstance(capabilities.get("positionEncodings", []), list | None):
        return None
    auth = capabilities.get("auth")
    if auth is None:
        return False
    if not isinstance(auth, dict) or not _plain_keys(auth):
        return None
    terminal = auth.get("terminal")
    if terminal is not None and not isinstance(terminal, bool):
        return None
    return bool(terminal)


def workspace_of(params: Any) -> tuple[str, list[str] | None] | None:
    """A ``session/new``'s ``cwd`` and ``additionalDirectories`` when ``NewSessionRequest`` takes
    these params as they are, else None.

    The SDK's model requires ``cwd`` (a string) and ``mcpServers`` (a list: the entries it cannot
    read it drops, as it drops additional directories that are not strings).
    """
    if not isinstance(params, dict) or not _plain_keys(params):
        return None
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not isinstance(params.get("mcpServers"), list):
        return None
    extra = params.get("additionalDirectories")
    if extra is not None and not (isinstance(extra, list) and all(isinstance(item, str) for item in extra)):
        return None
    return cwd, extra


class Reception:
    """Answers ``initialize`` and ``session/new`` until the SDK has loaded or a message needs it."""

    def __init__(self, transport: StdioTransport, arrival: Arrival) -> None:
        self._transport = transport
        self._arrival = arrival
        self.answered: list[Answered] = []
        # A client with a trust dialog of its own wants the workspace's standing in session/new's answer,
        # which means searching the workspace for what it carries: that answer is left to the handler.
        self._trust_client = False

    async def run(self, loading: Loading, load: Callable[[], None]) -> dict[str, Any] | Reading | None:
        """Answer what it can until ``loading`` is done; ``load`` begins it when there is nothing
        to do. Returns where the SDK goes on: the message not answered, the read under way, or None."""
        while not loading.done():
            reading: Reading = asyncio.ensure_future(self._transport.read_message())
            await asyncio.wait({reading}, timeout=IDLE_SECONDS)
            if not reading.done():
                load()
                either: set[asyncio.Future[Any]] = {reading, loading}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    return reading
            message = reading.result()
            if message is None or not await self._answer(message):
                load()
                return message
        return None

    async def _answer(self, message: dict[str, Any]) -> bool:
        """Answer ``message`` if it is a request the reception is sure of; False leaves it to the SDK."""
        if "id" not in message:
            return False
        method, params = message.get("method"), message.get("params")
        if method == "initialize":
            terminal_auth = terminal_auth_of(params)
            if terminal_auth is None:
                return False
            from acp_hermes.adapter.trust import advertised

            capabilities = params.get("clientCapabilities") if isinstance(params, dict) else None
            self._trust_client = isinstance(capabilities, dict) and advertised(capabilities)
            early = Answered(method, params, initialize_result(terminal_auth))
        elif method == "session/new":
            found = await self._new_session(params)
            if found is None:
                return False
            early = found
        else:
            return False
        # As the SDK's engine writes an answer (wire.StdioTransport.send: the same bytes).
        await self._transport.send({"jsonrpc": "2.0", "id": message["id"], "result": early.result})
        self.answered.append(early)
        log.debug("%s answered before the ACP SDK loaded", method)
        return True

    async def _new_session(self, params: Any) -> Answered | None:
        """The session's id and choices when the handler would answer with them, else None: that
        handler gives the errors (a workspace path refused, no key, a configuration error, a
        state.db that cannot be opened)."""
        found = workspace_of(params)
        if found is None or self._trust_client:
            return None
        try:
            root, _ = workspace(*found)
        except InvalidInput:
            return None
        arrival = self._arrival
        if arrival.config_error is not None or not arrival.settings.has_api_key:
            return None
        opening, probing = arrival.db_opening, arrival.sandbox_probe
        if opening is None:
            return None
        # Begun on threads at start-up: state.db must open (else the handler gives the error), and
        # whether bypass is offered depends on the sandbox. Waited for without blocking the loop (and
        # with asyncio.wait, whose cancelling cancels neither).
        waiting = [asyncio.wrap_future(started) for started in (opening, probing) if started is not None]
        await asyncio.wait(waiting)
        failures = [done.exception() for done in waiting]  # each retrieved: the handler says why
        if failures[0] is not None:  # state.db (a failed probe is tried again where it is needed)
            return None
        choices = arrival.new_session(root)
        if choices is None:  # a trusted project's own settings: merged by the handler
            return None
        session_id = str(uuid.uuid4())
        result = new_session_result(session_id, choices, arrival.settings)
        return Answered("session/new", params, result, (session_id, choices))


class _Loader:
    """The SDK and the handlers imported, and the runtime built (``build``: the settings validated), on
    a thread once ``start`` is called (any number of times)."""

    def __init__(self, build: Callable[[], tuple[Runtime, str | None]], loaded: Callable[[], None]) -> None:
        self.done: Future[Loaded] = Future()
        self._build = build
        self._loaded = loaded
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            threading.Thread(target=self._load, name="ACP SDK import", daemon=True).start()

    def _load(self) -> None:
        self.done.set_running_or_notify_cancel()  # from now on nothing cancels it
        try:
            from acp_hermes.adapter.sdk import import_schema_lean

            import_schema_lean()
            import acp.agent.connection  # noqa: F401  what serve builds on

            from acp_hermes.adapter import server, wire

            wire.use_fast_json()
            runtime, config_error = self._build()
            self._loaded()
            self.done.set_result(Loaded(server, runtime, config_error))
        except BaseException as exc:  # raised again where the server waits for it
            self.done.set_exception(exc)


async def serve_stdio(arrival: Arrival, build: Callable[[], tuple[Runtime, str | None]], protocol_fd: int,
                      limit: int, loaded: Callable[[], None] = lambda: None) -> None:
    """Serve ACP on stdin and ``protocol_fd`` until stdin closes. ``build`` makes the runtime (and says
    why the configuration cannot be used, if it cannot) on the loading thread, after the SDK and the
    handlers are imported; ``loaded`` runs there last."""
    loader = _Loader(build, loaded)
    loading = asyncio.wrap_future(loader.done)
    reader, writer = await open_streams(protocol_fd, limit)
    transport = StdioTransport(reader, writer)
    reception = Reception(transport, arrival)
    switching = sys.getswitchinterval()
    sys.setswitchinterval(min(switching, SWITCH_SECONDS))
    try:
        first = await reception.run(loading, loader.start)
        loader.start()
        await asyncio.wait({loading})  # not ``await loading``: a cancel would cancel the loading
        done = loading.result()
    except asyncio.CancelledError:  # stopped by a signal: a session already announced is still stored
        if reception.answered:
            loader.start()
            await asyncio.wait({loading})
            done = loading.result()
            agent = done.server.HermesAgent(done.runtime, done.config_error)
            await done.server.serve(agent, transport, reception.answered, listen=False)
        raise
    finally:
        sys.setswitchinterval(switching)
    transport.hand_back(first)
    await done.server.serve(done.server.HermesAgent(done.runtime, done.config_error), transport, reception.answered)

