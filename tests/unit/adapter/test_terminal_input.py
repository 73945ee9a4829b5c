"""The demo's keyboard: lines from a real file descriptor, read on a thread while the event loop goes
on; a waiting question takes the next line, the chat the others; the end of input reaches both."""

from __future__ import annotations

import os
from collections.abc import Iterator

import anyio
import pytest

from acp_hermes.adapter.terminal_input import Keyboard


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A pipe; the test closes its writing end (its reader thread then ends)."""
    read, write = os.pipe()
    yield read, write
    os.close(read)


@pytest.mark.anyio
async def test_lines_go_to_a_waiting_question_first_then_to_the_chat(pipe: tuple[int, int]) -> None:
    read, write = pipe
    keyboard = Keyboard(read)
    with anyio.fail_after(10):
        os.write(write, "héllo\n/steer now\n".encode())
        assert await keyboard.line() == "héllo"
        assert await keyboard.line() == "/steer now"
        async with anyio.create_task_group() as group:
            answers: list[str | None] = []

            async def ask() -> None:
                answers.append(await keyboard.answer())

            group.start_soon(ask)
            await anyio.wait_all_tasks_blocked()  # the question waits before the line is typed
            os.write(write, b"2\nnext prompt\n")
        assert answers == ["2"]
        assert await keyboard.line() == "next prompt"
        os.close(write)
        assert await keyboard.line() is None


@pytest.mark.anyio
async def test_a_question_called_off_gets_none_and_the_end_of_input_ends_both(pipe: tuple[int, int]) -> None:
    read, write = pipe
    keyboard = Keyboard(read)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            answers: list[str | None] = []

            async def ask() -> None:
                answers.append(await keyboard.answer())

            group.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            keyboard.call_off_questions()  # Ctrl-C cancelled the turn that asked
        assert answers == [None]
        os.write(write, b"last line, no newline")
        os.close(write)
        assert await keyboard.line() == "last line, no newline"
        assert await keyboard.line() is None
        assert await keyboard.line() is None  # and it stays ended
        assert await keyboard.answer() is None
