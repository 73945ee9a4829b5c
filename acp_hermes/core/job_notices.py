"""What a session's background jobs tell the model and the user when they end.

The tools layer records each job's end once (``tools.terminal.BackgroundJobs``) and queues what the
model has not seen end through ``process``. This module decides who hears of it and when:

* a turn is running: the model gets the note with the next tool result the loop produces
  (``ended``); the user sees what the model does about it;
* the session is idle: the user gets a one-line notice at once (an agent message, stored for
  ``session/load`` but never sent to the model), and the model gets the note at the start of the
  next turn, beside the user's prompt (``turn_started``);
* a job ended during a turn whose model made no tool call after it: the notice is shown as the turn
  ends (``turn_ended``) and the note waits for the next turn, as when idle.

``BackgroundJobs.take_ended`` hands out each end once, so no job is noted or shown twice. The ends go
to the model as ``core.turn_input`` notes (the note's words are ``JobEnded.note``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal

from acp_hermes.core.events import EventSink, JobFinished

if TYPE_CHECKING:
    from acp_hermes.core.transcript import Transcript
    from acp_hermes_tools.context import ToolScope
    from acp_hermes_tools.contracts import JobEnded
    from acp_hermes_tools.terminal import BackgroundJobs

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class JobNotices:
    """One session's end-of-job notes (for the model) and notices (for the user).

    Everything here runs on the event loop: the jobs' ``on_end`` hook is brought there by
    ``tools.terminal.on_event_loop``, installed by the first turn (jobs are only started in turns,
    and the hook needs the running loop).
    """

    def __init__(self, scope: ToolScope, sink: EventSink, transcript: Callable[[], Transcript],
                 spawn: Spawn) -> None:
        self._scope = scope
        self._sink = sink
        self._transcript = transcript  # the session's current one: compaction replaces it
        self._spawn = spawn
        self._jobs: BackgroundJobs | None = None  # once a turn has started
        self._turn_running = False
        self._held: list[JobEnded] = []  # shown to the user, not yet told to the model

    def turn_started(self) -> list[JobEnded]:
        """A turn begins: the jobs that ended since the last one, for the user's message. Installs the
        end-of-job hook on the first call."""
        if self._jobs is None:
            from acp_hermes_tools.terminal import background_jobs, on_event_loop

            self._jobs = background_jobs(self._scope)
            self._jobs.on_end = on_event_loop(self._job_ended)
        self._turn_running = True
        ended, self._held = [*self._held, *self._jobs.take_ended()], []
        return ended

    def ended(self) -> list[JobEnded]:
        """For the loop: the jobs that ended since, for the tool result it makes."""
        return [] if self._jobs is None else self._jobs.take_ended()

    async def turn_ended(self) -> None:
        """A turn ended: show the user the jobs that ended in it unheard of by the model; their notes
        wait for the next turn."""
        self._turn_running = False
        await self._show(self._take_for_later())

    def _job_ended(self, ended: JobEnded) -> None:
        """The hook, on the event loop: every end is told as such (an editor's task list); an idle
        session shows the notice now (a running turn notes it)."""
        self._spawn(self._sink.emit(finished(ended)))
        if self._turn_running:
            return
        shown = self._take_for_later()  # taken now: a turn starting before the notice is sent gets the note
        if shown:
            self._spawn(self._show(shown))

    def _take_for_later(self) -> list[JobEnded]:
        if self._jobs is None:
            return []
        ended = self._jobs.take_ended()
        self._held.extend(ended)
        return ended

    async def _show(self, ended: list[JobEnded]) -> None:
        from acp_hermes.core.notices import notice as notice_of

        for item in ended:
            line = notice(item)
            text = f"\n\n{line}\n"
            message_id = f"job-notice-{uuid.uuid4()}"
            await self._sink.emit(notice_of("job", line, shown=text, message_id=message_id,
                                            severity="info" if item.exit_code == 0 else "warning"))
            await self._transcript().add_local_reply(text, message_id=message_id)


def finished(ended: JobEnded) -> JobFinished:
    """A job's end as a task list shows it: exit code 0 completed, any other failed, a signal stopped."""
    state: Literal["completed", "failed", "stopped"] = (
        "completed" if ended.exit_code == 0 else "stopped" if ended.signal is not None else "failed")
    return JobFinished(ended.job_id, state, f"{ended.status} after {_duration(ended.duration)}")


def _duration(seconds: float) -> str:
    from acp_hermes_tools.contracts import duration_text

    return duration_text(seconds)


def notice(ended: JobEnded) -> str:
    """The user's one line: ``⏹ Background job job-1 (`npm test`) exited with code 0 after 3.2s — …``."""
    from acp_hermes_tools.contracts import duration_text
    from acp_hermes_tools.terminal import command_summary

    command = command_summary(ended.command)
    quoted = f"`` {command} ``" if "`" in command else f"`{command}`"
    return (f"⏹ Background job {ended.job_id} ({quoted}) {ended.status} after {duration_text(ended.duration)}"
            " — the agent will see this at its next turn.")
