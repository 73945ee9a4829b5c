"""The ``process`` tool: the session's background jobs, started with ``terminal`` and ``background: true``.

``list`` shows them; ``poll`` returns a job's new output (its log from where the last read stopped,
at most ``POLL_BYTES`` a call) and its status; ``wait`` waits for one to end (or a timeout, or the
turn's cancel); ``kill`` stops one (SIGTERM to its process group, SIGKILL after a grace); ``write``
sends text to the stdin of one started with ``stdin: true``.

Reading asks nothing: the jobs and their logs are the session's own. Stopping a job, and writing to a
job in the sandbox, go through the gate as the command line that would do the same
(``tools.context.job_command_line``), so they follow the mode and the sandbox as commands do; a write to
a job that runs outside the sandbox is asked as a command outside it, with the exact text shown
(``ToolContext.authorize_job``). Only this session's jobs can be named: the
jobs live in its ``ToolState``, and the context's doors refuse a job another session started.
Whenever a result tells the model that a job ended, that job is marked as reported, so the core's
end-of-job notice (``BackgroundJobs.take_ended``) does not repeat it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio

from acp_hermes_memory.text import one_line
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import TextDisplay, duration_text
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult
from acp_hermes_tools.terminal import BACKGROUND_JOBS, POLL_BYTES, BackgroundJob, BackgroundJobs, command_summary

DEFAULT_WAIT = 30.0
MAX_WAIT = 600.0
_END_RECORD_SECONDS = 5.0  # after its process ended: how long a job's end may take to be recorded
_WAIT_INTERVAL = 0.05  # how often wait looks whether the job ended (its end is recorded on a thread)
ACTIONS = ("list", "poll", "wait", "kill", "write")

DESCRIPTION = (
    "Manage this session's background jobs (commands started with terminal and background: true; each "
    "has an id like job-1). Actions:\n"
    "- list: every job with its pid, command, status (running, or how it ended) and runtime.\n"
    "- poll: a job's new output since the last poll or wait (at most 32 KB; the newest part is kept when "
    "there is more) and its status.\n"
    "- wait: wait until the job ends or `timeout` seconds pass (default 30, at most 600), then return its "
    "status and new output.\n"
    "- kill: stop the job and everything it started (SIGTERM, then SIGKILL after 2 seconds).\n"
    "- write: send `input` to the job's stdin, exactly as given (end a line with \\n); only for jobs "
    "started with stdin: true. `eof: true` then closes its stdin, for programs that read to the end.\n"
    "kill and write ask the user as a command would; a write to a job started outside the sandbox asks "
    "each time unless the user allowed all input to that job."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
        "job_id": {"type": "string", "description": "The job, e.g. job-1 (every action but list)."},
        "timeout": {"type": "number", "description": "wait: seconds to wait at most (default 30, clamped to 0-600)."},
        "input": {"type": "string", "description": "write: the text to send to the job's stdin."},
        "eof": {"type": "boolean", "description": "write: close the job's stdin afterwards.", "default": False},
    },
    "required": ["action"],
    "additionalProperties": False,
}

_TITLES = {
    "list": "List background jobs",
    "poll": "Read the output of {job}",
    "wait": "Wait for {job}",
    "kill": "Stop {job}",
    "write": "Send input to {job}",
}


def present_process(args: dict[str, Any], scope: ToolScope) -> Presentation:
    """``Stop job-2: npm run dev``: the action, the job, and its command when this session has it."""
    action = str(args.get("action", ""))
    job_id = str(args.get("job_id", "")) or "a job"
    title = _TITLES.get(action, "Manage background jobs").format(job=job_id)
    if action != "list" and scope is not None and BACKGROUND_JOBS in scope.state:
        job = scope.state.get(BACKGROUND_JOBS).find(job_id)
        if job is not None:
            title += f": {one_line(command_summary(job.command), 60)}"
    return Presentation(title)


async def process(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    action: str = args["action"]
    jobs = ctx.state.get(BACKGROUND_JOBS)
    if action == "list":
        return _list(jobs)
    raw_id = args.get("job_id")
    if not raw_id:
        raise ToolError(f"{action} needs job_id (the id terminal gave the background command, e.g. job-1)")
    job = jobs.find(raw_id.strip()) or jobs.find(f"job-{raw_id.strip()}")  # "3" for job-3
    if job is None:
        known = ", ".join(job.job_id for job in jobs.jobs) or "none yet"
        raise ToolError(f"no background job {raw_id!r} in this session (its jobs: {known})")
    if action == "poll":
        return _report(jobs, job)
    if action == "wait":
        return await _wait(jobs, job, args.get("timeout"), ctx)
    if action == "kill":
        return await _kill(jobs, job, ctx)
    return await _write(job, args, ctx)


def _status(job: BackgroundJob) -> str:
    if job.end is None:
        return f"{job.job_id} is running (pid {job.pid}, for {duration_text(job.runtime)})"
    return f"{job.job_id} {job.end.status} after {duration_text(job.end.duration)}"


def _state(job: BackgroundJob) -> dict[str, Any]:
    """What the stored call keeps of a job's status."""
    end = job.end
    status = "running" if end is None else ("killed" if end.signal else "exited")
    return {"job_id": job.job_id, "pid": job.pid, "command": job.command, "status": status,
            "exit_code": None if end is None else end.exit_code, "signal": None if end is None else end.signal,
            "started_at": job.started_at, "runtime": round(job.runtime, 3)}


def _list(jobs: BackgroundJobs) -> ToolResult:
    if not jobs.jobs:
        return ToolResult("No background jobs in this session (terminal with background: true starts one).",
                          raw_output={"jobs": []})
    lines = []
    for job in jobs.jobs:
        if job.end is None:
            status = f"running for {duration_text(job.runtime)}"
        else:
            status = f"{job.end.status} after {duration_text(job.end.duration)}"
            jobs.mark_reported(job)
        started = time.strftime("%H:%M:%S", time.localtime(job.started_at))
        stdin = "; stdin open" if job.input_open and job.end is None else ""
        lines.append(f"{job.job_id}  pid {job.pid}  {status} (started {started}{stdin})  "
                     f"$ {one_line(command_summary(job.command), 100)}")
    count = len(jobs.jobs)
    text = f"{count} background job{'s' if count != 1 else ''}:\n" + "\n".join(lines)
    return ToolResult(text, display=(TextDisplay(text, fence=""),), raw_output={"jobs": [_state(j) for j in jobs.jobs]})


def _report(jobs: BackgroundJobs, job: BackgroundJob, heading: str = "", *, ok: bool = True) -> ToolResult:
    """The job's status and its new output; a job seen to have ended is marked as reported."""
    end, status = job.end, _status(job)  # before reading: output read after its end was recorded is all of it
    output, skipped = job.read_new_output(POLL_BYTES)
    if end is not None:  # what the model is told now includes the end
        jobs.mark_reported(job)
    parts = [heading or f"{status}."]
    if skipped:
        parts.append(f"[{skipped:,} bytes of new output skipped: at most {POLL_BYTES // 1024} KB is returned per "
                     f"call, the newest; the whole log is {job.log_path}]")
    parts.append("New output:\n" + output.removesuffix("\n") if output else "No new output.")
    text = "\n".join(parts)
    raw = {**_state(job), "new_bytes": len(output.encode("utf-8")), "skipped_bytes": skipped}
    return ToolResult(text, ok=ok, display=(TextDisplay(text, fence=""),), raw_output=raw)


def clamp_wait(raw: float | None) -> float:
    """The model's wait, between 0 and 600 seconds (30 when missing or not a number)."""
    if raw is None or not math.isfinite(raw):
        return DEFAULT_WAIT
    return min(max(float(raw), 0.0), MAX_WAIT)


async def _wait(jobs: BackgroundJobs, job: BackgroundJob, raw_timeout: float | None, ctx: ToolContext) -> ToolResult:
    timeout = clamp_wait(raw_timeout)
    if job.end is None:
        await ctx.show([TextDisplay(f"Waiting up to {duration_text(timeout)} for {job.job_id} to end …")])
        with anyio.move_on_after(timeout):  # a cancelled turn cancels this too
            while not job.ended.is_set():
                await anyio.sleep(_WAIT_INTERVAL)
    if job.end is None:
        heading = (f"{job.job_id} is still running (pid {job.pid}, for {duration_text(job.runtime)}) after "
                   f"waiting {duration_text(timeout)}.")
        return _report(jobs, job, heading)
    return _report(jobs, job)


async def _kill(jobs: BackgroundJobs, job: BackgroundJob, ctx: ToolContext) -> ToolResult:
    if job.end is not None:
        return _report(jobs, job, f"{_status(job)} before it was asked to stop; nothing was sent to it.")
    await ctx.authorize_job(job, "kill")
    await ctx.stop_job(job)
    with anyio.move_on_after(_END_RECORD_SECONDS):
        while not job.ended.is_set():
            await anyio.sleep(_WAIT_INTERVAL)
    if job.end is None:
        return _report(jobs, job, f"{job.job_id} (pid {job.pid}) did not end, even after SIGKILL.", ok=False)
    return _report(jobs, job, f"Stopped {job.job_id}: it {job.end.status} after {duration_text(job.end.duration)}.")


async def _write(job: BackgroundJob, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text = args.get("input")
    eof = bool(args.get("eof", False))
    if not text and not eof:
        raise ToolError("write needs input (the text to send; end a line with \\n), or eof: true")
    text = text or ""
    if job.end is not None:
        raise ToolError(f"{_status(job)}; it reads no more input")
    if not job.stdin:
        raise ToolError(f"{job.job_id} was started without stdin: true, so its stdin is empty and cannot be "
                        "written to; start the command again with background: true and stdin: true")
    if not job.input_open:
        raise ToolError(f"{job.job_id}'s stdin was closed (eof) by an earlier write")
    await ctx.authorize_job(job, "write", text, eof=eof)
    size = len(text.encode("utf-8"))
    try:
        written = await ctx.write_job(job, text, eof=eof)
    except BrokenPipeError:
        raise ToolError(f"{job.job_id} no longer reads its stdin (it closed it or ended)") from None
    raw = {"job_id": job.job_id, "written_bytes": written, "bytes": size, "eof": eof and written == size}
    if written < size:
        return ToolResult(f"Only {written:,} of {size:,} bytes reached {job.job_id}'s stdin: it stopped reading its "
                          "input. Poll it to see what it is doing.", ok=False, raw_output=raw)
    closed = " and closed its stdin" if eof else ""
    shown = f"Sent {size:,} byte{'s' if size != 1 else ''} to {job.job_id}'s stdin{closed}."
    return ToolResult(f"{shown} Poll or wait to see its output.", display=(TextDisplay(shown),), raw_output=raw)


PROCESS_TOOL = Tool(
    name="process",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=process,
    kind="execute",
    access=Access.EXECUTE,
    parallel_safe=False,
    present=present_process,
    toolsets=("terminal",),
)
