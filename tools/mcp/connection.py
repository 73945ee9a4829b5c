"""One MCP server for one session: connect, list its tools, call them, notice when it goes away.

``run()`` owns the connection for its whole life (anyio scopes must close in the task that
opened them): the session spawns it, calls go through ``call()`` from the turn's task, and
``stop()`` ends it — which closes the transport and, for stdio, ends the server process: the SDK
closes its stdin, then sends ``SIGTERM`` and at last ``SIGKILL`` to its process group, so a server
that ignores both its stdin closing and ``SIGTERM`` still ends. On Linux a stdio server runs through
``tools/launcher.py`` (``tools.mcp.stdio``), which also kills its group whenever the agent dies.
A server that does not answer within its ``connect_timeout``, fails to start, or closes the
connection later is marked ``failed`` with a line saying why, and ``on_change`` tells the
session so it can tell the user.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from acp_hermes_tools.mcp.specs import McpServerSpec

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

log = logging.getLogger(__name__)

Status = Literal["connecting", "ready", "failed", "stopped"]
LISTING_PAGE_LIMIT = 50  # pages of tools/list before a server counts as misbehaving


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as its server declares it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    read_only: bool = False


class ServerGone(Exception):
    """The server is not connected (any more); the message says why."""


class McpConnection:
    def __init__(self, spec: McpServerSpec, cwd: Path, on_change: Callable[[McpConnection], None]) -> None:
        self.spec = spec
        self.status: Status = "connecting"
        self.detail = ""  # why it failed or stopped
        self.tools: tuple[RemoteTool, ...] = ()
        self._cwd = cwd
        self._on_change = on_change
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._settled: anyio.Event | None = None
        self._lost: anyio.Event | None = None  # set the moment the transport's read stream ends
        self._stop_requested = False

    @property
    def name(self) -> str:
        return self.spec.name

    # -- life

    async def run(self) -> None:
        """Connect and hold the connection until ``stop()`` or the server goes away. Never raises."""
        lost = self._lost = anyio.Event()
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._stop_requested:
                scope.cancel()
            scope.deadline = anyio.current_time() + self.spec.connect_timeout
            try:
                async with AsyncExitStack() as stack:
                    client = await _connect(self.spec, self._cwd, stack, lost.set)
                    self.tools = await _list_tools(client)
                    scope.deadline = math.inf  # connected: from now on only stop() or a loss ends it
                    self._client = client
                    self._set("ready")
                    await lost.wait()  # call() refuses from here on: the status is no longer "ready"
                    self._set("failed", "the server closed the connection (it may have exited)")
            except Exception as error:  # a server's failure must never reach the session's task
                detail = _describe(error)
                if self.status == "connecting" and lost.is_set():
                    detail = f"it exited or closed the connection before it was ready ({detail})"
                log.warning("MCP server %s: %s", self.name, detail, exc_info=log.isEnabledFor(logging.DEBUG))
                self._set("failed", detail)
        self._client = None
        if scope.cancelled_caught and self.status == "connecting":
            if self._stop_requested:
                self._set("stopped")
            else:
                self._set("failed", f"did not answer within {self.spec.connect_timeout:g} s")
        elif self._stop_requested and self.status == "ready":
            self._set("stopped")
        self._settled_event().set()  # also when it ends still "connecting" (stopped before it began)

    def stop(self) -> None:
        """End the connection (and a stdio server's process); safe before, during and after ``run``."""
        self._stop_requested = True
        if self._scope is not None:
            self._scope.cancel()

    async def wait_settled(self) -> None:
        """Until the connection is ready or has failed (returns at once when it already has)."""
        if self.status == "connecting":
            await self._settled_event().wait()

    def _settled_event(self) -> anyio.Event:
        if self._settled is None:  # made in async code: anyio picks the running loop's backend
            self._settled = anyio.Event()
        return self._settled

    # -- calls

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool``; raises ``ServerGone`` when the server is not connected or drops the call,
        ``TimeoutError`` when it takes longer than the server's ``timeout``."""
        client = self._client
        if client is None or self.status != "ready":
            raise ServerGone(f"MCP server {self.name} is {self.status}" + (f": {self.detail}" if self.detail else ""))
        from mcp.shared.exceptions import MCPError

        with anyio.fail_after(self.spec.call_timeout):
            try:
                return await client.call_tool(tool, arguments, read_timeout_seconds=self.spec.call_timeout)
            except MCPError as error:
                if self.status != "ready" or (self._lost is not None and self._lost.is_set()):
                    raise ServerGone(f"MCP server {self.name} went away: {self.detail or error}") from error
                raise

    def _set(self, status: Status, detail: str = "") -> None:
        if self.status == status and self.detail == detail:
            return
        self.status, self.detail = status, detail
        if status != "connecting":
            self._settled_event().set()
        log.info("MCP server %s: %s%s", self.name, status, f" ({detail})" if detail else "")
        try:
            self._on_change(self)
        except Exception:
            log.exception("MCP status callback failed")


async def _connect(spec: McpServerSpec, cwd: Path, stack: AsyncExitStack, on_lost: Callable[[], None]) -> Client:
    """An entered ``mcp.Client`` for ``spec``; ``on_lost`` runs when the server closes the connection."""
    from mcp import Client

    transport = _watched(_transport(spec, cwd, stack), on_lost)
    client = Client(transport, client_info=_client_info(), read_timeout_seconds=spec.connect_timeout, cache=None)
    return await stack.enter_async_context(client)


def _transport(spec: McpServerSpec, cwd: Path, stack: AsyncExitStack) -> Any:
    if spec.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        from acp_hermes_tools.mcp.stdio import server_command

        workdir = Path(spec.cwd).expanduser() if spec.cwd else cwd
        workdir_or_none = workdir if workdir.is_dir() else None
        command, args = server_command(spec.command, spec.args, get_default_environment() | dict(spec.env),
                                       workdir_or_none)
        params = StdioServerParameters(command=command, args=args, env=dict(spec.env) or None, cwd=workdir_or_none)
        return stdio_client(params)  # its stderr goes to ours: the editor's log for this agent
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(spec.url, headers=dict(spec.headers) or None, timeout=spec.connect_timeout)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # the SDK's client with its MCP timeouts

    http = create_mcp_http_client(headers=dict(spec.headers) or None)
    stack.push_async_callback(http.aclose)
    return streamable_http_client(spec.url, http_client=http)


@asynccontextmanager
async def _watched(transport: Any, on_lost: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """``transport`` whose read stream calls ``on_lost`` when it ends: the SDK itself only notices a
    server that went away at the next call."""
    async with transport as (reads, writes):
        yield _WatchedReads(reads, on_lost), writes


class _WatchedReads:
    """A transport's read stream that reports its end (EOF or a closed resource)."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedReads:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedReads:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. the SDK's optional ``last_context``
        return getattr(self._stream, name)


async def _list_tools(client: Client) -> tuple[RemoteTool, ...]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(LISTING_PAGE_LIMIT):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            annotations = tool.annotations
            tools.append(RemoteTool(
                name=tool.name,
                description=tool.description or "",
                input_schema=tool.input_schema or {"type": "object"},
                title=tool.title or (annotations.title if annotations else None),
                read_only=bool(annotations and annotations.read_only_hint),
            ))
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


def _client_info() -> Any:
    from mcp_types import Implementation

    return Implementation(name="acp-hermes", version=_version())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("acp-hermes")
    except PackageNotFoundError:
        return "0"


def _describe(error: BaseException) -> str:
    """One line for people: the innermost real cause of a (possibly grouped) failure."""
    while getattr(error, "exceptions", None):  # an exception group (3.10 has no builtin name for it)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(error, FileNotFoundError):
        return f"could not start it: {error.strerror or 'not found'}: {error.filename or ''}".rstrip(": ")
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]
