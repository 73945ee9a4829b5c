"""The demo's chat: after its first prompt, what the user types goes to the same session, as an
editor would send it.

Each line is a ``session/prompt`` (slash commands included: the agent answers them), so everything
the agent offers an editor can be tried here. On a terminal, input is read while a turn runs: a
``/steer …`` or ``/queue …`` typed then is sent at once (the agent reads a steer at the turn's next
step, and runs a queued prompt when the turn ends); any other line waits as the next prompt. Ctrl-C
cancels the running turn (``session/cancel``, and a pending permission question is answered
"cancelled"); at the prompt, it says how to leave, and a second Ctrl-C in a row quits (status 130);
Ctrl-D quits (status 0). From a pipe (a script), each line is sent once the one before it is
answered, echoed after ``you>``, and the end of input quits.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from acp_hermes.adapter.errors import describe_request_error
from acp_hermes.adapter.terminal_client import BOLD, DIM, RED, DemoClient, TerminalView, connected

if TYPE_CHECKING:
    from acp.client.connection import ClientSideConnection
    from anyio.abc import TaskGroup

    from acp_hermes.adapter.terminal_input import Keyboard

PROMPT = "you> "
ChatEnd = Literal["quit", "interrupted", "failed"]  # Ctrl-D or the end of input; Ctrl-C twice; the first turn failed


async def converse(view: TerminalView, client: DemoClient, keyboard: Keyboard, first: str, cwd: Path,
                   env: dict[str, str], log_level: str | None, *, interactive: bool, hint: str,
                   failed: Callable[[], bool], title_wait: float = 0.0) -> ChatEnd:
    """A chat in a new session of a spawned server, ``first`` its first prompt. ``failed``: whether the
    model could not answer (the first turn that fails ends the chat); ``title_wait``: seconds to wait, on
    leaving, for the session's title (the agent names it after the first turn)."""
    keyboard.start()  # at once: what the user types during the first turn reaches it
    async with connected(client, cwd, env, log_level, own_session=interactive) as (conn, session_id):
        chat = Chat(conn, session_id, view, keyboard, interactive=interactive, failed=failed)
        end = await chat.run(first, hint)
        if title_wait and chat.answered and end == "quit":
            await client.wait_for_title(title_wait)
        return end


class Chat:
    """One conversation with a spawned server's session, on the terminal or from a pipe."""

    def __init__(self, conn: ClientSideConnection, session_id: str, view: TerminalView, keyboard: Keyboard, *,
                 interactive: bool, failed: Callable[[], bool]) -> None:
        self._conn = conn
        self._session_id = session_id
        self._view = view
        self._keyboard = keyboard
        self._interactive = interactive
        self._failed = failed
        self._running = 0  # prompts sent and not answered yet
        self._armed = False  # Ctrl-C at the prompt: the next one quits
        self.answered = False  # a model turn ran to its end
        self.end: ChatEnd = "quit"
        self._leaving = False

    def _leave(self, group: TaskGroup, end: ChatEnd = "quit") -> None:
        self.end, self._leaving, self._view.prompt = end, True, None
        group.cancel_scope.cancel()

    async def run(self, first: str, hint: str) -> ChatEnd:
        """Send ``first``, then what the user types, until they quit."""
        view = self._view
        async with anyio.create_task_group() as group:
            if self._interactive:
                group.start_soon(self._watch_ctrl_c, group)
                view.line(view.paint(hint, DIM))
            view.line(view.paint(PROMPT + first, BOLD))
            await self._start(group, first, first=True)
            while (line := await self._keyboard.line()) is not None:
                if self._interactive:
                    view.typed()
                self._armed = False
                text = line.strip()
                if not text:
                    view.show_prompt()
                    continue
                if not self._interactive:
                    view.line(view.paint(PROMPT + text, BOLD))
                elif self._running and not text.startswith("/"):
                    view.line(view.paint("queued: it runs when this turn ends (`/steer <words>` sends words "
                                         "into the running turn instead)", DIM))
                await self._start(group, text)
            self._leave(group)  # Ctrl-D during a turn: the server stores what it has as it closes
        view.prompt = None
        view.finish()
        return self.end

    async def _start(self, group: TaskGroup, text: str, *, first: bool = False) -> None:
        """Send ``text``: on a terminal in the background (the user may type on), from a pipe to its answer."""
        self._running += 1
        self._view.prompt = None
        if self._interactive:
            group.start_soon(self._send, group, text, first)
        else:
            await self._send(group, text, first)

    async def _send(self, group: TaskGroup, text: str, first: bool) -> None:
        """One prompt, to its answer; the prompt shown again once nothing runs."""
        from acp import RequestError, text_block

        view = self._view
        try:
            try:
                response = await self._conn.prompt(session_id=self._session_id, prompt=[text_block(text)])
            except RequestError as exc:  # refused (a mode this machine does not offer, …): say why, chat on
                view.line(view.paint(f"refused: {describe_request_error(exc)}", RED))
                return
            stop = response.stop_reason
            command = text.startswith("/")
            if not command or stop != "end_turn":  # a command's reply needs no end line
                view.line(view.paint(f"turn ended: {stop}", DIM))
            self.answered |= not command and stop != "cancelled"
            if first and self._failed():  # the model cannot be used: nothing to chat with
                self._leave(group, "failed")
        finally:
            self._running -= 1
            if not self._running and self._interactive and not self._leaving:
                view.prompt = PROMPT
                view.show_prompt()

    async def _watch_ctrl_c(self, group: TaskGroup) -> None:
        view = self._view
        with anyio.open_signal_receiver(signal.SIGINT) as interrupts:
            async for _ in interrupts:
                view.break_line()  # below the terminal's ^C
                if self._running:
                    view.line(view.paint("cancelling the turn…", DIM))
                    self._keyboard.call_off_questions()
                    await self._conn.cancel(session_id=self._session_id)
                elif self._armed:
                    self._leave(group, "interrupted")
                    return
                else:
                    self._armed = True
                    view.line(view.paint("(Ctrl-C again quits; so does Ctrl-D)", DIM))
                    view.show_prompt()
