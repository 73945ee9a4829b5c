"""Drive the real acp-hermes server over stdio with the ACP SDK's client, as an editor would.

``running_agent`` spawns ``python -m acp_hermes`` in a fresh HERMES_HOME, pointed at the fake
Anthropic server, and validates every message the agent sends against the official schema
(``WireValidator``) — the test fails at exit if anything was invalid. ``EditorClient`` is a
real client: it answers permission requests by a policy, serves fs reads (with optional unsaved
buffers) and writes, runs ``terminal/*`` commands as real subprocesses and answers questions
(``elicitation/create`` forms, when ``running_agent(forms=True)`` advertises them) by a script. ``raw_agent`` spawns
the same server on plain pipes for tests that need exact bytes (malformed input, stdout purity);
``write_config`` writes the config file a server reads at start-up.

Every permission question is checked too: it may offer at most one option of each kind (a client may
show options only by their kind, where two "allow once" would look alike); ``running_agent`` fails at
exit on any that did not (``EditorClient.kind_problems``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    ClientCapabilities,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)
from anyio.abc import TaskGroup

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.schema_check import AcpSchema, WireValidator

# Chooses an optionId for a permission request (toolCall dict, options dicts), or None to cancel.
PermissionPolicy = Callable[[dict[str, Any], list[dict[str, Any]]], "str | None"]
# How the user answers a form: ("accept", {field: value}), ("decline", None), ("cancel", None), or
# ("error", None) for an editor that answers the request with an error.
FormAnswer = tuple[str, "dict[str, Any] | None"]


def kind_problems(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> list[str]:
    """What is wrong with a question's options for a client that shows only their kinds (empty: nothing)."""
    kinds = [option["kind"] for option in options]
    twice = sorted(kind for kind in set(kinds) if kinds.count(kind) > 1)
    return [f"{tool_call.get('title')!r} offers {kinds.count(kind)} options of kind {kind}: "
            f"{[o['name'] for o in options if o['kind'] == kind]}" for kind in twice]


def choose(kind: str) -> PermissionPolicy:
    """A policy that always picks the option of ``kind`` (allow_once, reject_always, ...)."""

    def policy(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        return next(o["optionId"] for o in options if o["kind"] == kind)

    return policy


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None


class EditorClient:
    """The editor side of the connection, with real file and terminal behaviour."""

    def __init__(self, *, policy: PermissionPolicy | None = None, hold_permissions: bool = False,
                 refuse_reads: str | None = None, refuse_terminals: str | None = None,
                 form_answers: list[FormAnswer] | None = None, hold_forms: bool = False) -> None:
        self.policy = policy or choose("allow_once")
        self.form_answers = list(form_answers or [])  # one per elicitation/create, in order
        self.forms: list[dict[str, Any]] = []  # each elicitation/create as sent (message + its mode's fields)
        self.form_shown = anyio.Event()
        self.hold_forms = hold_forms  # keep every form open until release_forms is set, then cancel it
        self.release_forms = anyio.Event()
        self.refuse_reads = refuse_reads  # answer fs/read_text_file with this reason, as an error
        self.refuse_terminals = refuse_terminals  # ... and terminal/create
        self.buffers: dict[str, str] = {}
        self.permission_requests: list[dict[str, Any]] = []
        self.kind_problems: list[str] = []  # questions with two options of one kind (running_agent fails on them)
        self.permission_asked = anyio.Event()
        self.hold_permissions = hold_permissions
        self.release_permission = anyio.Event()
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, _Terminal] = {}
        self.terminal_commands: list[tuple[str, list[str]]] = []  # (command, args) of each terminal/create
        self.released: list[str] = []
        self.killed: list[str] = []
        self._next_terminal = 0

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        offered = [o.model_dump(mode="json", by_alias=True) for o in options]
        self.permission_requests.append({"toolCall": call, "options": offered})
        self.kind_problems += kind_problems(call, offered)
        self.permission_asked.set()
        if self.hold_permissions:
            await self.release_permission.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        chosen = self.policy(call, offered)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.forms.append({"message": message, **mode.model_dump(mode="json", by_alias=True, exclude_none=True)})
        self.form_shown.set()
        if self.hold_forms:
            await self.release_forms.wait()
            return CancelElicitationResponse(action="cancel")
        action, content = self.form_answers.pop(0)
        if action == "error":
            raise RequestError(-32603, "Internal error", {"details": "this editor shows no forms today"})
        if action == "accept":
            return AcceptElicitationResponse(action="accept", content=content)
        if action == "decline":
            return DeclineElicitationResponse(action="decline")
        return CancelElicitationResponse(action="cancel")

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None  # updates are read from the raw wire (AgentProcess.updates)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if self.refuse_reads is not None:
            raise RequestError(-32603, "Internal error", {"details": self.refuse_reads})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=await anyio.Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
        self.writes.append((path, content))
        self.buffers.pop(path, None)
        target = anyio.Path(path)
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_text(content, encoding="utf-8")

    async def create_terminal(self, command: str, session_id: str, args: list[str] | None = None,
                              cwd: str | None = None, env: Any = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> CreateTerminalResponse:
        self.terminal_commands.append((command, list(args or [])))
        if self.refuse_terminals is not None:
            raise RequestError(-32603, "Internal error", {"details": self.refuse_terminals})
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        terminal = _Terminal(process, output_byte_limit)
        terminal.reader = asyncio.get_running_loop().create_task(self._pump(terminal))
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _pump(self, terminal: _Terminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(4096):
            terminal.output += chunk
            if terminal.limit is not None and len(terminal.output) > terminal.limit:
                del terminal.output[: len(terminal.output) - terminal.limit]
                terminal.truncated = True

    def _status(self, terminal: _Terminal) -> TerminalExitStatus | None:
        code = terminal.process.returncode
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is not None and terminal.reader is not None:
            await terminal.reader
        return TerminalOutputResponse(output=terminal.output.decode("utf-8", "replace"),
                                      truncated=terminal.truncated, exit_status=self._status(terminal))

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **kwargs: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        await terminal.process.wait()
        status = self._status(terminal)
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        self.killed.append(terminal_id)
        self._kill(self.terminals[terminal_id])
        return KillTerminalResponse()

    def _kill(self, terminal: _Terminal) -> None:
        if terminal.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(terminal.process.pid, signal.SIGKILL)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self.released.append(terminal_id)
        terminal = self.terminals[terminal_id]
        self._kill(terminal)
        await terminal.process.wait()
        return ReleaseTerminalResponse()


class Arrivals:
    """Wakes waiters whenever the agent sends anything (no polling, no sleeps)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def observe(self, event: Any) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def next(self) -> None:
        await self._event.wait()


@dataclass
class AgentProcess:
    """A running server and everything observed about it."""

    conn: Any
    process: asyncio.subprocess.Process
    client: EditorClient
    wire: WireValidator
    home: Path
    workspace: Path
    arrivals: Arrivals

    def sent(self, method: str | None = None) -> list[dict[str, Any]]:
        """Messages the agent sent (requests, notifications, responses), optionally one method's."""
        return [m for m in self.wire.messages if method is None or m.get("method") == method]

    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        """The ``update`` objects of every ``session/update`` so far, in order."""
        out = []
        for message in self.sent("session/update"):
            params = message["params"]
            if session_id is not None and params["sessionId"] != session_id:
                continue
            if kind is not None and params["update"]["sessionUpdate"] != kind:
                continue
            out.append(params["update"])
        return out

    def agent_text(self, session_id: str) -> str:
        return "".join(u["content"]["text"] for u in self.updates(session_id, "agent_message_chunk"))

    def tool_updates(self, session_id: str, call_id: str) -> list[dict[str, Any]]:
        return [u for u in self.updates(session_id) if u.get("toolCallId") == call_id]

    async def new_session(self, cwd: Path | None = None, **kwargs: Any) -> str:
        response = await self.conn.new_session(cwd=str(cwd or self.workspace), mcp_servers=[], **kwargs)
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> str:
        response = await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])
        return response.stop_reason

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait (bounded) until ``condition()`` holds, re-checking whenever the agent sends something."""
        with anyio.fail_after(timeout):
            while not condition():
                await self.arrivals.next()

    async def wait_for_update(
        self, session_id: str, kind: str, count: int = 1, timeout: float = 10.0
    ) -> dict[str, Any]:
        """Wait until ``count`` updates of ``kind`` arrived; returns the ``count``-th."""
        await self.wait_for(lambda: len(self.updates(session_id, kind)) >= count, timeout)
        return self.updates(session_id, kind)[count - 1]


class Prompts:
    """Prompts running concurrently on one connection, with their results in completion order."""

    def __init__(self, agent: AgentProcess, group: TaskGroup) -> None:
        self._agent = agent
        self._group = group
        self.results: dict[str, str] = {}
        self.finished: list[str] = []
        self.done: dict[str, anyio.Event] = {}
        self._sent = 0
        agent.conn._conn.add_observer(self._observe)

    def _observe(self, event: StreamEvent) -> None:
        if event.direction == StreamDirection.OUTGOING and event.message.get("method") == "session/prompt":
            self._sent += 1

    async def start(self, name: str, session_id: str, text: str) -> None:
        """Send the prompt and return once it is on the wire (its answer is awaited in the background)."""
        self.done[name] = anyio.Event()
        expected = self._sent + 1
        self._group.start_soon(self._run, name, session_id, text)
        await self._agent.wait_for(lambda: self._sent >= expected)

    async def _run(self, name: str, session_id: str, text: str) -> None:
        self.results[name] = await self._agent.prompt(session_id, text)
        self.finished.append(name)
        self.done[name].set()


CANCEL_LIMIT = 10.0  # seconds a cancelled prompt may take to return (the kill escalates after 2 s)


class PromptTask:
    """Runs one prompt in the background so the test can act while it is in flight."""

    def __init__(self, agent: AgentProcess, session_id: str) -> None:
        self.agent = agent
        self.session_id = session_id
        self.stop_reason: str | None = None
        self.done = anyio.Event()

    async def run(self, text: str) -> None:
        self.stop_reason = await self.agent.prompt(self.session_id, text)
        self.done.set()


async def cancel_and_wait(agent: AgentProcess, task: PromptTask) -> str | None:
    await agent.conn.cancel(session_id=task.session_id)
    with anyio.fail_after(CANCEL_LIMIT):
        await task.done.wait()
    return task.stop_reason


def server_env(home: Path, fake: FakeAnthropic | None, **extra: str) -> dict[str, str]:
    env = {"HERMES_HOME": str(home), "ACP_HERMES_LOG_LEVEL": "DEBUG", "PYTHONUNBUFFERED": "1"}
    if fake is not None:
        env.update(fake.env())
    env.update(extra)
    return env


@asynccontextmanager
async def running_agent(
    tmp_path: Path,
    fake: FakeAnthropic | None,
    *,
    client: EditorClient | None = None,
    fs: bool = False,
    terminal: bool = False,
    forms: bool = False,
    workspace_trust: bool = False,
    home: Path | None = None,
    workspace: Path | None = None,
    env: dict[str, str] | None = None,
    command: tuple[str, ...] = (sys.executable, "-m", "acp_hermes"),
    initialize: bool = True,
    schema_path: str | os.PathLike[str] | AcpSchema | None = None,
) -> AsyncIterator[AgentProcess]:
    """Spawn the server, initialize it, and check the wire is schema-valid when the block ends.

    ``schema_path`` validates the wire against another schema file (the unstable one, for a run
    whose client advertised unstable capabilities); by default the official stable schema.
    ``workspace_trust`` advertises a trust dialog of the client's own (``_meta["workspace-trust"]``)."""
    home = home or tmp_path / "hermes-home"
    workspace = workspace or tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    client = client or EditorClient()
    wire = WireValidator(schema_path)
    arrivals = Arrivals()
    stderr_path = tmp_path / f"agent-stderr-{os.getpid()}-{id(client)}.log"
    full_env = server_env(home, fake, **(env or {}))
    with stderr_path.open("ab") as stderr:
        async with spawn_agent_process(
            client, command[0], *command[1:], env=full_env, cwd=str(workspace),
            transport_kwargs={"stderr": stderr}, observers=[wire.observe, arrivals.observe], use_unstable_protocol=True,
        ) as (conn, process):
            agent = AgentProcess(conn, process, client, wire, home, workspace.resolve(), arrivals)
            if initialize:
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal,
                        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if forms else None,
                        field_meta={"workspace-trust": True} if workspace_trust else None,
                    ),
                    client_info=Implementation(name="acp-hermes-tests", version="1"),
                )
            yield agent
    wire.assert_clean()
    assert not client.kind_problems, "permission questions a kinds-only client cannot tell apart:\n" + "\n".join(
        client.kind_problems)


# A config line for tests that are not about workspace trust but need a workspace's own files (AGENTS.md, hints,
# .hermes/skills) loaded: every workspace trusted, as before trust existed (tests/integration/test_trust.py is
# about trust).
TRUST_ALL = "trust: {ask: false}\n"


def write_config(home: Path, text: str) -> Path:
    """Write ``$HERMES_HOME/acp-hermes/config.yaml`` (YAML text) before the server is spawned."""
    path = home / "acp-hermes" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def allow_bypass_here(home: Path) -> None:
    """Let a test that only needs ``bypass`` have it on a machine without the OS sandbox too: there the mode is
    offered only when the user's config allows it (``allow_unsandboxed_bypass``), so the test's config says so."""
    from acp_hermes_tools.sandbox import detect

    if not detect().available:
        write_config(home, "allow_unsandboxed_bypass: true\n")


@dataclass
class RawAgent:
    """The server over raw NDJSON stdio: exact bytes in, every byte out kept, for malformed input and purity."""

    process: asyncio.subprocess.Process
    stderr_path: Path
    arrivals: Arrivals
    stdout_lines: list[bytes] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    # The length of stderr as each stdout line arrived: what the server had logged (or traced) by then.
    stderr_sizes: list[int] = field(default_factory=list)
    _next_id: int = 0

    @property
    def stdout_bytes(self) -> bytes:
        return b"".join(self.stdout_lines)

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.write(json.dumps(message).encode("utf-8") + b"\n")

    async def wait_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Wait (bounded) until ``condition()`` is truthy, re-checking whenever a line arrives; return it."""
        with anyio.fail_after(timeout):
            while not (found := condition()):
                await self.arrivals.next()
        return found

    def response(self, request_id: Any) -> dict[str, Any] | None:
        return next((m for m in self.messages if isinstance(m, dict) and "method" not in m
                     and m.get("id") == request_id), None)

    async def request(self, method: str, params: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Send a request with a fresh id and return the whole response message."""
        self._next_id += 1
        request_id = self._next_id
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.wait_for(lambda: self.response(request_id), timeout)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.stderr_sizes.append(self.stderr_path.stat().st_size)
            self.stdout_lines.append(line)
            try:
                self.messages.append(json.loads(line))
            except ValueError:
                self.messages.append(None)  # kept so the caller sees the stream was impure
            self.arrivals.observe(line)


@asynccontextmanager
async def raw_agent(
    tmp_path: Path, fake: FakeAnthropic | None, *, env: dict[str, str] | None = None, home: Path | None = None
) -> AsyncIterator[RawAgent]:
    """Spawn ``python -m acp_hermes`` on plain pipes; on exit close stdin and wait for a clean exit."""
    from acp.transports import default_environment

    home = home or tmp_path / "hermes-home"
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    stderr_path = tmp_path / f"raw-agent-stderr-{os.getpid()}.log"
    full_env = {**default_environment(), **server_env(home, fake, **(env or {}))}
    with stderr_path.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "acp_hermes", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr, env=full_env, cwd=str(workspace),
        )
    agent = RawAgent(process, stderr_path, Arrivals())
    reader = asyncio.get_running_loop().create_task(agent._read())
    try:
        yield agent
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            with anyio.fail_after(15):
                await process.wait()
                await reader
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            reader.cancel()
