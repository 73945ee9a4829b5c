"""A background job's end reaches the model and the user (``core.job_notices`` through ``Session``).

Real sessions (``SessionManager``, SessionDB, the fake provider) and real subprocesses through the
real ``terminal`` and ``process`` tools. Nothing sleeps to let a job get somewhere: each job blocks on
reading a FIFO until the test opens it (``Release``), its end is an event (``BackgroundJob.ended``),
and the user's notice is waited for as it is emitted.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from acp_hermes.core.events import AgentText, Event, Notice
from acp_hermes.core.job_notices import notice
from acp_hermes.core.session import Session
from acp_hermes.core.sessions import SessionManager, SessionWiring
from acp_hermes.core.transcript import StoredReply, stored_messages
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.types import ModelRequest, StreamEvent
from acp_hermes_tools.contracts import JobEnded
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.terminal import BACKGROUND_JOBS, background_jobs
from tests.support.fake_provider import text, tool_call
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio

WAIT_LIMIT = 20.0  # seconds any one thing may take before the test fails
NOTE = re.compile(r"\[Background job job-1 \(`cat release\.fifo > /dev/null; echo job says bye`\) exited with "
                  r"code 0 after \d+\.\ds\. Use process\(action=\"poll\", job_id=\"job-1\"\) for output not shown "
                  r"here\. Its last output:\]\n<job-output job=\"job-1\">\njob says bye\n</job-output>")
NOTICE = re.compile(r"\n\n⏹ Background job job-1 \(`cat release\.fifo > /dev/null; echo job says bye`\) exited "
                    r"with code 0 after \d+\.\ds — the agent will see this at its next turn\.\n")


class Sink:
    """The session's events; ``notices`` are the job notices shown, ``shown`` fires at each."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.shown = anyio.Event()

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, Notice) and event.message_id.startswith("job-notice-"):
            self.shown.set()
            self.shown = anyio.Event()

    @property
    def notices(self) -> list[Notice]:
        return [e for e in self.events if isinstance(e, Notice) and e.message_id.startswith("job-notice-")]

    async def wait_for_notices(self, count: int) -> None:
        with anyio.fail_after(WAIT_LIMIT):
            while len(self.notices) < count:
                await self.shown.wait()


class Release:
    """A FIFO the job reads to its end: the job runs until ``release`` opens and closes it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "release.fifo"
        os.mkfifo(self.path)

    @property
    def command(self) -> str:
        return f"cat {self.path.name} > /dev/null; echo job says bye"  # run in its directory

    def release(self) -> None:
        """Blocks until the job has opened the FIFO to read, then lets it end."""
        with open(self.path, "w"):
            pass


@asynccontextmanager
async def live_session(env: Env) -> AsyncIterator[tuple[Session, Sink]]:
    """A session in bypass mode whose background work (the notices) runs in a task group."""
    sink = Sink()
    # Bypass without a sandbox (the test settings turn it off): only where the user's config allows it.
    env.runtime.settings = env.runtime.settings.model_copy(update={"allow_unsandboxed_bypass": True})

    async with anyio.create_task_group() as group:
        def spawn(job: Coroutine[Any, Any, None]) -> None:
            group.start_soon(_await, job)

        manager = SessionManager(env.runtime, SessionWiring(
            sink_for=lambda sid: sink, asker_for=lambda sid: env.asker, editor_for=lambda sid: LocalEditor(),
        ), spawn)
        session = await manager.create(env.cwd, ())
        session.set_choice("mode", "bypass")
        try:
            yield session, sink
        finally:
            session.close()
            group.cancel_scope.cancel()


async def _await(job: Coroutine[Any, Any, None]) -> None:
    await job


async def ask(session: Session, prompt: str) -> str:
    return await session.prompt([TextPart(prompt)])


def end_job(session: Session, release: Release) -> JobEnded:
    """Let job-1 end and wait (blocking) until its end is recorded: called inside a scripted reply."""
    release.release()
    job = background_jobs(session.services.tools).find("job-1")
    assert job is not None and job.ended.wait(WAIT_LIMIT) and job.end is not None
    return job.end


def start_job(release: Release) -> list[StreamEvent]:
    return tool_call("terminal", {"command": release.command, "background": True})


def tool_results(env: Env, request: int) -> list[str]:
    """The tool_result texts of the last message of request ``request`` (0-based)."""
    last = env.provider.bodies[request]["messages"][-1]
    return ["".join(part["text"] for part in block["content"]) if isinstance(block["content"], list)
            else block["content"] for block in last["content"] if block.get("type") == "tool_result"]


def user_texts(env: Env, request: int) -> list[str]:
    """The text blocks of the user's message that request ``request`` (0-based) ends with."""
    last = env.provider.bodies[request]["messages"][-1]
    assert last["role"] == "user"
    return [block["text"] for block in last["content"] if block.get("type") == "text"]


def notes_sent(env: Env) -> int:
    """How many notes the model was sent, counted in the last request (the whole history)."""
    history = str(env.provider.bodies[-1]["messages"])
    return history.count("[Background job job-1 ")


async def test_a_job_ending_during_a_turn_is_noted_in_the_next_tool_result(env: Env) -> None:
    release = Release(env.cwd)
    (env.cwd / "a.txt").write_text("apple\n")
    async with live_session(env) as (session, sink):
        def finish_then_read(request: ModelRequest) -> list[StreamEvent]:
            end_job(session, release)
            return tool_call("read_file", {"path": "a.txt"})

        env.provider.script(start_job(release), finish_then_read, text("Done."), text("Hello."))
        assert await ask(session, "run it in the background") == "end_turn"
        [started] = tool_results(env, 1)
        assert started.startswith("Started in the background as job-1") and "[Background job" not in started
        [read] = tool_results(env, 2)
        assert "apple" in read and NOTE.search(read), read
        assert sink.notices == []  # the model heard of it: the user sees what it does about it

        assert await ask(session, "and now?") == "end_turn"
        assert user_texts(env, 3) == ["and now?"] and notes_sent(env) == 1
        assert sink.notices == []


async def test_a_job_ending_while_idle_is_shown_at_once_and_noted_at_the_next_turn(env: Env) -> None:
    release = Release(env.cwd)
    async with live_session(env) as (session, sink):
        env.provider.script(start_job(release), text("Started."), text("It finished."), text("Yes."))
        assert await ask(session, "run it in the background") == "end_turn"
        assert sink.notices == []

        with anyio.fail_after(WAIT_LIMIT):
            await anyio.to_thread.run_sync(release.release, abandon_on_cancel=True)
        await sink.wait_for_notices(1)
        [shown] = sink.notices
        assert NOTICE.fullmatch(shown.text), shown.text

        assert await ask(session, "what happened?") == "end_turn"
        prompt, note = user_texts(env, 2)
        assert prompt == "what happened?" and NOTE.fullmatch(note), note
        assert await ask(session, "anything else?") == "end_turn"
        assert user_texts(env, 3) == ["anything else?"] and notes_sent(env) == 1
        assert len(sink.notices) == 1  # never shown twice

    _, rows = await env.manager().restore(session.id, env.cwd, ())
    replies = [m.text for m in stored_messages(rows) if isinstance(m, StoredReply) and m.text]
    assert replies == ["Started.", shown.text, "It finished.", "Yes."]  # replayed in its place, not sent
    assert not any("⏹" in str(message) for message in session.state.transcript.messages)


async def test_a_job_ending_after_the_last_tool_call_is_shown_as_the_turn_ends(env: Env) -> None:
    release = Release(env.cwd)
    async with live_session(env) as (session, sink):
        def finish_then_answer(request: ModelRequest) -> list[StreamEvent]:
            end_job(session, release)
            return text("Started it.")

        env.provider.script(start_job(release), finish_then_answer, text("It finished."))
        assert await ask(session, "run it in the background") == "end_turn"
        [shown] = sink.notices  # before the prompt's answer, not after it
        assert NOTICE.fullmatch(shown.text) and sink.events.index(shown) > max(
            i for i, e in enumerate(sink.events) if isinstance(e, AgentText) and e.text == "Started it.")

        assert await ask(session, "did it finish?") == "end_turn"
        _, note = user_texts(env, 2)
        assert NOTE.fullmatch(note) and notes_sent(env) == 1 and len(sink.notices) == 1


async def test_a_job_the_model_saw_end_through_process_is_not_noted(env: Env) -> None:
    release = Release(env.cwd)
    async with live_session(env) as (session, sink):
        def finish_then_wait(request: ModelRequest) -> list[StreamEvent]:
            release.release()
            return tool_call("process", {"action": "wait", "job_id": "job-1", "timeout": WAIT_LIMIT})

        env.provider.script(start_job(release), finish_then_wait, text("Done."), text("Nothing."))
        assert await ask(session, "run it and wait for it") == "end_turn"
        [waited] = tool_results(env, 2)
        assert waited.startswith("job-1 exited with code 0") and "[Background job" not in waited

        assert await ask(session, "anything new?") == "end_turn"
        assert user_texts(env, 3) == ["anything new?"] and notes_sent(env) == 0
        assert sink.notices == []


async def test_the_hook_is_installed_by_the_first_turn(env: Env) -> None:
    async with live_session(env) as (session, _):
        assert BACKGROUND_JOBS not in session.services.tools.state  # session/new stays cheap
        env.provider.script(text("Hi."))
        await ask(session, "hello")
        assert background_jobs(session.services.tools).on_end is not None


def test_the_notice_is_one_line_with_the_command_quoted() -> None:
    ended = JobEnded("job-3", "echo `date`\nnpm test", 42, None, "SIGTERM", 75.0, "", Path("/tmp/job-3.log"))
    assert notice(ended) == ("⏹ Background job job-3 (`` echo `date` … ``) was killed by SIGTERM after 1m15s — the "
                             "agent will see this at its next turn.")
