"""A terminal ACP client: it drives an agent over stdio the way an editor does and renders what
it streams (text, thoughts, plans, tool calls with their diffs and output, permission prompts,
usage). ``acp-hermes demo`` runs it against this server: one prompt (``drive``), or a chat that
goes on from there (``adapter.terminal_chat``).
"""

from __future__ import annotations

import contextlib
import difflib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes_memory.fs import atomic_write_text

if TYPE_CHECKING:
    from acp.client.connection import ClientSideConnection

    from acp_hermes.adapter.terminal_input import Keyboard

SHUTDOWN_SECONDS = 2.0  # for the server to store what it has and exit once its stdin closes, before a SIGTERM

DIM, BOLD, RESET = "\033[2m", "\033[1m", "\033[0m"
RED, GREEN, YELLOW, CYAN = "\033[31m", "\033[32m", "\033[33m", "\033[36m"
STATUS_MARKS = {"pending": "…", "in_progress": "▶", "completed": "✔", "failed": "✘"}
PLAN_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TerminalView:
    """Renders ``session/update`` payloads (plain JSON) as readable terminal output."""

    def __init__(self, color: bool, workspace: Path | None = None) -> None:
        self._color = color
        self.workspace = workspace
        self._stream: str | None = None  # what the current line is part of; None: at the start of a line
        self._line_start = True
        self._titles: dict[str, str] = {}
        self.prompt: str | None = None  # the chat's input prompt, while it waits for the user; None while busy

    def paint(self, text: str, *styles: str) -> str:
        return "".join(styles) + text + RESET if self._color and styles else text

    def write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
        if text:
            self._line_start = text.endswith("\n")

    def _block(self, kind: str) -> None:
        if self._stream != kind:
            if self._stream is not None and not self._line_start:
                self.write("\n")
            self._stream = kind

    def line(self, text: str) -> None:
        self._block("line")
        self.write(text + "\n")
        self._stream = None

    def ask(self, text: str) -> None:
        """Write a prompt for the user's input, the cursor left after it."""
        self._block("prompt")
        self.write(text)

    def show_prompt(self) -> None:
        """The chat's prompt, unless it is busy or the prompt is already on the last line."""
        if self.prompt is not None and self._stream != "prompt":
            self.ask(self.prompt)

    def typed(self) -> None:
        """The user pressed Enter (the terminal echoed it): the cursor is at the start of a line."""
        self._stream, self._line_start = None, True

    def break_line(self) -> None:
        """End the current line, whatever is on it (the terminal's own ``^C`` echo included)."""
        self.write("\n")
        self._stream = None

    def finish(self) -> None:
        """Leave the cursor at the start of a line for whatever the shell prints next."""
        if self._stream is not None and not self._line_start:
            self.break_line()

    def show(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._block(f"text {update.get('messageId')}")  # another message (a command's reply): its own line
            self.write(update["content"].get("text", ""))
        elif kind == "user_message_chunk":  # words sent into a running turn, where the model reads them
            self.line(self.paint(f"↪ you: {update['content'].get('text', '')}", BOLD))
        elif kind == "agent_thought_chunk":
            if self._stream != "thought":
                self._block("thought")
                self.write(self.paint("thinking: ", DIM))
            self.write(self.paint(update["content"].get("text", ""), DIM))
        elif kind in ("tool_call", "tool_call_update"):
            self._tool(update)
        elif kind == "plan":
            self.line(self.paint("plan:", BOLD))
            for entry in update["entries"]:
                self.line(f"  {PLAN_MARKS.get(entry['status'], '[ ]')} {entry['content']}")
        elif kind == "usage_update":
            cost = update.get("cost")
            money = f", ${cost['amount']:.4f}" if cost else ""
            self.line(self.paint(f"context: {update['used']:,} / {update['size']:,} tokens{money}", DIM))
        elif kind == "session_info_update" and update.get("title"):
            self.line(self.paint(f"session title: {update['title']}", DIM))

    def _tool(self, update: dict[str, Any]) -> None:
        call_id = update["toolCallId"]
        if "title" in update:
            self._titles[call_id] = update["title"]
        status = update.get("status")
        title = self._titles.get(call_id, call_id)
        if update.get("sessionUpdate") == "tool_call":
            self.line(self.paint(f"{STATUS_MARKS['pending']} {title}", CYAN))
            return
        if status not in ("completed", "failed"):
            return
        color = GREEN if status == "completed" else RED
        self.line(self.paint(f"{STATUS_MARKS[status]} {title}", color))
        for item in update.get("content") or []:
            self.content(item)

    def _label(self, path: str) -> str:
        """Paths inside the workspace are shown relative to it."""
        if self.workspace is not None:
            with contextlib.suppress(ValueError):
                return str(Path(path).relative_to(self.workspace))
        return path.lstrip("/")

    def content(self, item: dict[str, Any]) -> None:
        if item.get("type") == "diff":
            old = (item.get("oldText") or "").splitlines(keepends=True)
            new = item.get("newText", "").splitlines(keepends=True)
            label = self._label(item["path"])
            for row in difflib.unified_diff(old, new, f"a/{label}", f"b/{label}", n=2):
                row = row.rstrip("\n")
                style = GREEN if row.startswith("+") else RED if row.startswith("-") else DIM
                self.line("    " + self.paint(row, style))
        elif item.get("type") == "content":
            text = item["content"].get("text", "")
            lines = text.splitlines()
            for row in lines[:40]:
                self.line("    " + self.paint(row, DIM))
            if len(lines) > 40:
                self.line(self.paint(f"    … {len(lines) - 40} more lines", DIM))
        elif item.get("type") == "terminal":
            self.line(self.paint(f"    (terminal {item['terminalId']})", DIM))


class DemoClient:
    """The editor side: file access on local disk and permission prompts on the terminal.

    ``keyboard``: where a person answers permission questions; None when nobody can (no terminal):
    then the throwaway sample project (``sandbox``) is approved, anything else rejected."""

    def __init__(self, view: TerminalView, *, approve_all: bool, keyboard: Keyboard | None, sandbox: bool) -> None:
        self.view = view
        self._approve_all = approve_all
        self._keyboard = keyboard
        self._sandbox = sandbox
        self._titled: anyio.Event | None = None  # set when the session's title arrives
        self._asking: anyio.Lock | None = None  # one question on the terminal at a time

    def _title_event(self) -> anyio.Event:
        if self._titled is None:
            self._titled = anyio.Event()
        return self._titled

    async def wait_for_title(self, seconds: float) -> None:
        """Until the agent has named the session (it does so after the first turn), at most ``seconds``."""
        with anyio.move_on_after(seconds):
            await self._title_event().wait()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        shown = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.view.show(shown)
        self.view.show_prompt()  # it came while the chat waited for the user: the prompt again, below it
        if shown.get("sessionUpdate") == "session_info_update" and shown.get("title"):
            self._title_event().set()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        text = await anyio.Path(path).read_text(encoding="utf-8")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start: start + limit] if limit else lines[start:])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        await anyio.to_thread.run_sync(atomic_write_text, Path(path), content)
        return None

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        if self._asking is None:
            self._asking = anyio.Lock()
        async with self._asking:
            return await self._ask(options, tool_call)

    async def _ask(self, options: list[Any], tool_call: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        view = self.view
        view.line(view.paint(f"? permission: {call.get('title', call['toolCallId'])}", YELLOW, BOLD))
        for item in call.get("content") or []:
            view.content(item)
        choices = [o.model_dump(mode="json", by_alias=True) for o in options]
        if self._approve_all or (self._keyboard is None and self._sandbox):
            allow_once = next((o for o in choices if o["kind"] == "allow_once"), choices[0])
            reason = "--yes" if self._approve_all else "non-interactive, in a throwaway sample project"
            view.line(view.paint(f"  → {allow_once['name']} ({reason})", YELLOW))
            chosen = allow_once["optionId"]
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))
        if self._keyboard is None:
            view.line(view.paint("  → rejected (no terminal to ask on; pass --yes to approve)", YELLOW))
            reject = next((o for o in choices if o["kind"] == "reject_once"), choices[-1])
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=reject["optionId"]))
        for number, choice in enumerate(choices, 1):
            view.line(f"  {number}) {choice['name']}")
        while True:
            view.ask("  choose [1]: ")
            answer = await self._keyboard.answer()
            view.typed()
            if answer is None:  # Ctrl-C cancelled the turn, or the input ended
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            answer = answer.strip() or "1"
            if answer.isdigit() and 1 <= int(answer) <= len(choices):
                picked = choices[int(answer) - 1]["optionId"]
                return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=picked))
            if answer.lower() in ("q", "c", "cancel"):
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


@contextlib.asynccontextmanager
async def connected(client: DemoClient, cwd: Path, env: dict[str, str], log_level: str | None, *,
                    own_session: bool = False) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    """A spawned server, initialized, with a new session in ``cwd``: the connection and the session's id.

    ``own_session``: the server runs in a session (and process group) of its own, so the terminal's
    Ctrl-C reaches the demo alone, which cancels the turn instead. Closing its stdin ends it: it stores
    what it has first (a SIGTERM after ``SHUTDOWN_SECONDS``, a SIGKILL after as many again).
    """
    import asyncio

    from acp import PROTOCOL_VERSION, connect_to_agent
    from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

    args = ["-m", "acp_hermes"] + (["--log-level", log_level] if log_level else [])
    server = await asyncio.create_subprocess_exec(sys.executable, *args, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE, env=env, cwd=str(cwd),
                                                  start_new_session=own_session)
    assert server.stdin is not None and server.stdout is not None
    # DemoClient implements the client methods this agent uses; the SDK answers others with -32601.
    conn = connect_to_agent(client, server.stdin, server.stdout)  # type: ignore[arg-type]
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True,
                                                                             write_text_file=True)),
            client_info=Implementation(name="acp-hermes-demo", version="1"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        yield conn, session.session_id
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()
            with contextlib.suppress(OSError, RuntimeError):
                server.stdin.close()
            # Wait for it to leave on its own, then ask it to, then make it.
            stops: tuple[Callable[[], None], ...] = (lambda: None, server.terminate, server.kill)
            for stop in stops:
                with contextlib.suppress(ProcessLookupError):
                    stop()
                with anyio.move_on_after(SHUTDOWN_SECONDS):
                    await server.wait()
                    break


async def drive(view: TerminalView, client: DemoClient, prompt: str, cwd: Path, env: dict[str, str],
                log_level: str | None, *, title_wait: float = 0.0) -> str:
    """Run ``prompt`` in a new session of a spawned server; its stop reason. ``title_wait``: seconds to
    keep the server after the turn for the session's title (it names the session after the first turn)."""
    from acp import text_block

    async with connected(client, cwd, env, log_level) as (conn, session_id):
        view.line(view.paint(f"you: {prompt}", BOLD))
        response = await conn.prompt(session_id=session_id, prompt=[text_block(prompt)])
        view.line(view.paint(f"\nturn ended: {response.stop_reason}", DIM))
        if title_wait and response.stop_reason != "cancelled":
            await client.wait_for_title(title_wait)
        return response.stop_reason
