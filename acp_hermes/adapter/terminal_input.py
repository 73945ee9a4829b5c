"""What the user types into the demo's terminal client, read without ever blocking the event loop.

A daemon thread reads standard input's file descriptor and hands each line to the event loop, so the
user can type (``/steer …``, ``/queue …``) while a turn streams. It reads the descriptor, not
``sys.stdin``: a thread still blocked in the buffered reader when the interpreter exits holds its
lock, and Python aborts on that at shutdown. A line goes to the permission question waiting for an
answer when there is one, else to the chat.
"""

from __future__ import annotations

import codecs
import math
import os
import threading
from collections import deque

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


class _Answer:
    """One question's wait for the next line (None: end of input, or the question was called off)."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.line: str | None = None

    def give(self, line: str | None) -> None:
        self.line = line
        self.event.set()


class Keyboard:
    """Lines from standard input (a terminal or a pipe), in the event loop; None once it has ended."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._send: MemoryObjectSendStream[str | None]
        self._lines: MemoryObjectReceiveStream[str | None]
        self._send, self._lines = anyio.create_memory_object_stream(math.inf)
        self._questions: deque[_Answer] = deque()
        self._started = False
        self.ended = False

    def start(self) -> None:
        """Begin reading (once; called in the event loop the lines are for)."""
        if self._started:
            return
        self._started = True
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(token,), name="demo keyboard", daemon=True).start()

    def _read(self, token: anyio.lowlevel.EventLoopToken) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            pending += decoder.decode(chunk, final=not chunk)
            *lines, pending = pending.split("\n")
            if not chunk:
                lines += [pending] if pending else []
            for line in [*lines, *([None] if not chunk else [])]:
                try:
                    anyio.from_thread.run_sync(self._deliver, line, token=token)
                except RuntimeError:  # the event loop is gone: nobody is listening any more
                    return
            if not chunk:
                return

    def _deliver(self, line: str | None) -> None:
        if line is None:
            self.ended = True
            self.call_off_questions()
            self._send.send_nowait(None)
        elif self._questions:
            self._questions.popleft().give(line)
        else:
            self._send.send_nowait(line)

    async def line(self) -> str | None:
        """The next line typed for the chat (not an answer to a question); None at the end of input."""
        self.start()
        if self.ended and not self._lines.statistics().current_buffer_used:
            return None
        return await self._lines.receive()

    async def answer(self) -> str | None:
        """The next line, as the answer to a question; None when input ended or the question was called off."""
        self.start()
        if self.ended:
            return None
        waiting = _Answer()
        self._questions.append(waiting)
        try:
            await waiting.event.wait()
        finally:
            if waiting in self._questions:  # cancelled while waiting
                self._questions.remove(waiting)
        return waiting.line

    def call_off_questions(self) -> None:
        """Every question waiting for a line gets None (Ctrl-C cancelled the turn that asked it)."""
        while self._questions:
            self._questions.popleft().give(None)
