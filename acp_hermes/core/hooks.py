"""One session's hooks at the agent's key moments, and what their answers do.

``SessionHooks`` runs the hooks that match an event (``core.hook_runner``), reads their answers exactly
(``core.hook_answers``) and turns them into what the rest of the session acts on:

* ``around`` a tool call (the loop's): PreToolUse after the model asked and before the gate — "deny"
  (or exit 2) fails the call with the reason for the model and the hook named for the user; "ask" puts
  the question though the mode or a grant would not; "allow" lets the gate skip its question, never the
  sandbox, plan mode or a refusal. PostToolUse after the call: its blocks and context ride in the result.
* ``prompt_submitted``: UserPromptSubmit may block the prompt or add context (a fenced note in the
  user's message, never the system prompt).
* ``stopping``: Stop (SubagentStop for a child) may ask the agent to go on, once per turn.
* SessionStart's context goes with the first prompt; PreCompact and SessionEnd are told.

An answer not understood decides nothing (the gate decides as without hooks) and the user is told once
which hook said what. A project's hook runs only once the user approved its exact command.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.config import HookEvent, Settings
from acp_hermes.core.hook_answers import HookAnswer, read_answer
from acp_hermes.core.hook_config import (
    PROJECT_CONFIG,
    TOOL_EVENTS,
    Hook,
    HookApprovals,
    record_not_understood,
    session_hooks,
    tool_names,
)
from acp_hermes.core.hook_runner import run_hooks
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import Choices, Confirm, PermissionDenied, TextDisplay

if TYPE_CHECKING:
    from acp_hermes.core.runtime import Runtime
    from acp_hermes.core.state import SessionState
    from acp_hermes.permissions.gate import PermissionGate
    from acp_hermes_tools.context import ToolContext
    from acp_hermes_tools.registry import ToolCall, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

DENIED_FOR_MODEL = "A hook the user set up blocked this call ({hook}): {reason}"
DENIED_SHOWN = "Not run: blocked by the hook `{hook}`: {reason}"


@value
class PromptVerdict:
    """UserPromptSubmit's answers together: the hook that blocked the prompt and why, or the context added."""

    blocked_by: str | None = None
    reason: str = ""
    context: tuple[str, ...] = ()


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class SessionHooks:
    """The hooks of one session (a child's are its own, from the same config)."""

    __slots__ = ("_approved", "_approving", "_ended", "_hooks", "_loaded_trusted", "_rejected", "_source",
                 "_start_context", "_started", "_told", "approvals", "approve", "cwd", "gate", "names_of", "notify",
                 "own", "session_id", "settings", "subagent", "transcript", "trusted")

    def __init__(self, settings: Settings, session_id: str, cwd: Path, approvals: HookApprovals,
                 gate: PermissionGate, notify: Callable[[str], None], approve: Callable[[Hook], Awaitable[bool]],
                 transcript: Callable[[], Path | None],
                 names_of: Callable[[str], tuple[str, ...]] = lambda name: (name,), own: Path | None = None,
                 subagent: bool = False, trusted: Callable[[], bool] = lambda: False) -> None:
        self.settings = settings
        self.session_id = session_id
        self.cwd = cwd
        self.approvals = approvals
        self.gate = gate
        self.notify = notify
        self.approve = approve  # puts a project hook's command to the user; True: approved
        self.transcript = transcript  # writes the readable export a hook may read (blocking)
        self.names_of = names_of  # a tool's names, ours then Claude Code's
        self.own = own  # acp-hermes's folder in HERMES_HOME: answers not understood are kept there for doctor
        self.subagent = subagent
        self.trusted = trusted  # whether the workspace is trusted now (core.trust): its hooks load
        self._hooks: list[Hook] | None = None
        self._loaded_trusted = False  # the trust the loaded hooks were read under: a decision later reloads them
        self._rejected: set[str] = set()  # project commands declined this session
        self._approved: set[str] = set()  # ... and those found approved
        self._told: set[tuple[str, str]] = set()  # (hook, what it said) the user was told
        self._approving: anyio.Lock | None = None
        self._source: str | None = None  # how the session began (SessionStart's ``source``); None: not the user's
        self._started: anyio.Event | None = None
        self._ended = False  # SessionEnd was fired
        self._start_context: list[str] = []

    # -- which hooks

    async def hooks(self) -> list[Hook]:
        """Loaded once, off the event loop (the project's file is read where the workspace is trusted)."""
        trusted = self.trusted()
        if self._hooks is None or trusted != self._loaded_trusted:
            self._loaded_trusted = trusted
            hooks, problem = await anyio.to_thread.run_sync(session_hooks, self.settings, self.cwd, trusted)
            if problem:
                self.notify(f"⚠️ The project's hooks were not loaded: {problem}")
            self._hooks = hooks
        return self._hooks

    def has(self, *events: HookEvent) -> bool:
        """Whether any loaded hook is for one of ``events`` (False before ``hooks`` was awaited)."""
        return any(hook.event in events for hook in self._hooks or ())

    async def fire(self, event: HookEvent, payload: dict[str, Any],
                   tool: tuple[str, ...] | None = None) -> list[HookAnswer]:
        """Run the hooks of ``event`` that match the tool known by the names ``tool`` (and that may run) on
        ``payload``: their answers."""
        hooks = [hook for hook in await self.hooks() if hook.event == event and hook.matches(tool)]
        hooks = [hook for hook in hooks if await self._may_run(hook)]
        if not hooks:
            return []
        transcript = await anyio.to_thread.run_sync(self.transcript)
        data = {"session_id": self.session_id, "transcript_path": str(transcript or ""), "cwd": str(self.cwd),
                "hook_event_name": event, **payload}
        answers = [read_answer(run, event) for run in await run_hooks(hooks, data, self.cwd)]
        for answer in answers:
            log.debug("hook %s (%s, %s): %s in %.0f ms", answer.hook.name, event, answer.hook.source,
                      answer.outcome, answer.seconds * 1000)
            if answer.not_understood and self.own is not None:
                await anyio.to_thread.run_sync(record_not_understood, self.own, answer.hook.command,
                                               answer.not_understood)
            self._tell(answer)
        return answers

    async def _may_run(self, hook: Hook) -> bool:
        """A user's hook runs; a project's once the user approved its exact command (asked once)."""
        if hook.source == "user":
            return True
        if hook.command in self._rejected:
            return False
        if self._approving is None:
            self._approving = anyio.Lock()
        async with self._approving:  # one question per command, however many events fire at once
            if hook.command in self._rejected:
                return False
            if hook.command in self._approved or await anyio.to_thread.run_sync(self.approvals.approved,
                                                                               hook.command):
                self._approved.add(hook.command)
                return True
            if await self.approve(hook):
                await anyio.to_thread.run_sync(self.approvals.approve, hook.command)
                self._approved.add(hook.command)
                return True
            self._rejected.add(hook.command)
            return False

    def _tell(self, answer: HookAnswer) -> None:
        """What the user must hear of an answer: an error, a message, an answer not understood (once)."""
        told: list[str] = []
        if answer.not_understood:
            key = (answer.hook.command, answer.not_understood)
            if key not in self._told:
                self._told.add(key)
                told.append(f"⚠️ The hook `{answer.hook.name}` {answer.not_understood}; acp-hermes does not "
                            "understand that answer, so it decided nothing: the usual permissions apply.")
        if answer.message:
            told.append(answer.message if answer.message.startswith("Hook") else
                        f"Hook `{answer.hook.name}`: {answer.message}")
        for line in told:
            self.notify(line)

    # -- tool calls (the loop's ``around``)

    async def around(self, call: ToolCall, ctx: ToolContext, run: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        from acp_hermes_tools.registry import ToolResult

        arguments = dict(call.arguments or {})
        tool_input = self._tool_input(arguments)
        names = self.names_of(call.name)
        pre = await self.fire("PreToolUse", self._tool_payload(call, names, tool_input), names)
        denied = next((a for a in pre if a.decision == "deny"), None)
        if denied is not None:
            reason = denied.reason or "no reason given"
            log.info("tool call %s: denied by the hook %s", call.id, denied.hook.name)
            return ToolResult(DENIED_FOR_MODEL.format(hook=denied.hook.name, reason=reason), ok=False,
                              display=(TextDisplay(DENIED_SHOWN.format(hook=denied.hook.name, reason=reason)),))
        asked = next((a for a in pre if a.decision == "ask"), None)
        allowed = next((a for a in pre if a.decision == "allow"), None)
        if asked is not None:
            try:
                await self.gate.authorize(ctx, Confirm(
                    f"{ctx.title} — the hook `{asked.hook.name}` asks you to confirm",
                    asked.reason or "A hook you set up asks before this call.", self._shown_input(call, arguments)))
            except PermissionDenied as refused:
                return ToolResult(str(refused), ok=False, display=(TextDisplay(refused.shown),))
            allowed = asked  # the user said yes to this very call: the gate does not ask again
        if allowed is not None:
            self.gate.hook_allowed[call.id] = allowed.hook.name
        try:
            result = await run()
        finally:
            self.gate.hook_allowed.pop(call.id, None)
        post = await self.fire("PostToolUse", {**self._tool_payload(call, names, tool_input),
                                               "tool_response": _response(result)}, names)
        notes = [f"[A hook the user set up ({a.hook.name}) says about this result: {a.reason or 'blocked'}]"
                 for a in post if a.decision == "block"]
        notes += [_context_text(a) for a in post if a.context]
        if notes:
            result.text = "\n\n".join([result.text, *notes])
        return result

    @staticmethod
    def _tool_payload(call: ToolCall, names: tuple[str, ...], tool_input: dict[str, Any]) -> dict[str, Any]:
        """Claude Code's fields (its name for the tool, when it has one) and ours."""
        return {"tool_name": names[1] if len(names) > 1 else call.name, "tool_input": tool_input,
                "tool_use_id": call.id, "hermes_tool_name": call.name}

    def _tool_input(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments, with Claude Code's ``file_path`` (absolute) beside our ``path``."""
        path = arguments.get("path")
        if isinstance(path, str) and "file_path" not in arguments:
            return {**arguments, "file_path": os.path.normpath(self.cwd / path)}
        return arguments

    @staticmethod
    def _shown_input(call: ToolCall, arguments: dict[str, Any]) -> str:
        import json

        return json.dumps(arguments, ensure_ascii=False, indent=2)[:4000] if arguments else call.name

    # -- prompts, stops, the session's life

    async def prompt_submitted(self, text: str) -> PromptVerdict:
        answers = await self.fire("UserPromptSubmit", {"prompt": text})
        blocked = next((a for a in answers if a.decision == "block" or a.stop is not None), None)
        if blocked is not None:
            return PromptVerdict(blocked.hook.name, blocked.reason or blocked.stop or "no reason given")
        return PromptVerdict(context=tuple(_context_text(a) for a in answers if a.context))

    async def stopping(self, already_continued: bool) -> str | None:
        """Stop (or SubagentStop): the reason a hook gives for going on, unless the turn already went
        on once for a hook (bounded: the second stop stands)."""
        event: HookEvent = "SubagentStop" if self.subagent else "Stop"
        if not self.has(event):
            return None
        answers = await self.fire(event, {"stop_hook_active": already_continued})
        if already_continued:
            return None
        going_on = next((a for a in answers if a.decision == "block" and a.stop is None), None)
        return None if going_on is None else f"[{going_on.hook.name}] {going_on.reason or 'go on'}"

    def start(self, spawn: Callable[[Any], None], source: str) -> None:
        """SessionStart, beside the session's opening where there may be such hooks; its context waits for
        the first prompt (which runs it itself if it has not begun by then)."""
        self._source = source
        if self._may_have("SessionStart"):
            spawn(self._run_start())

    async def _run_start(self) -> None:
        if self._started is not None:  # begun already (by the first prompt, or by the spawn)
            return
        self._started = anyio.Event()
        try:
            answers = await self.fire("SessionStart", {"source": self._source})
            self._start_context.extend(_context_text(a) for a in answers if a.context)
        finally:
            self._started.set()

    async def start_context(self) -> list[str]:
        """SessionStart's context, once: the first prompt must not overtake it."""
        if self._source is None:
            return []
        if self._started is None:
            await self._run_start()
        elif not self._started.is_set():
            await self._started.wait()
        taken, self._start_context = list(self._start_context), []
        return taken

    async def compacting(self, manual: bool, focus: str | None) -> None:
        if await self.hooks() and self.has("PreCompact"):
            await self.fire("PreCompact", {"trigger": "manual" if manual else "auto",
                                           "custom_instructions": focus or ""})

    def ended(self, spawn: Callable[[Any], None]) -> None:
        """SessionEnd beside a close that cannot wait for it (the server shutting down): best effort."""
        if self._may_have("SessionEnd"):
            spawn(self.end())

    async def end(self) -> None:
        """Run SessionEnd's hooks once (``session/close`` answers after them; a later call runs none)."""
        if self._ended or not self._may_have("SessionEnd"):
            return
        self._ended = True
        await self.fire("SessionEnd", {"reason": "other"})

    def _may_have(self, event: HookEvent) -> bool:
        """Whether ``event`` may have hooks, before they are loaded: the user's config says, or a trusted project."""
        return (self.has(event) or event in self.settings.hooks
                or (self.trusted() and (self.cwd / PROJECT_CONFIG).is_file()))

    def uses_tools(self) -> bool:
        return self.has(*TOOL_EVENTS)


def _context_text(answer: HookAnswer) -> str:
    from acp_hermes.core.turn_input import render_hook_context

    return render_hook_context(answer.hook.name, answer.context)


def _response(result: ToolResult) -> dict[str, Any]:
    return {"success": result.ok, "output": result.text}


def describe(hooks: Sequence[Hook], approvals: HookApprovals) -> list[str]:
    """One line per hook: its event, matcher, command, where it comes from and, for a project's, whether
    approved (``/hooks``, ``acp-hermes hooks list``)."""
    lines = []
    for hook in hooks:
        where = "your config" if hook.source == "user" else (
            "project, approved" if approvals.approved(hook.command) else "project, not approved yet")
        matcher = f" [{hook.matcher}]" if hook.matcher and hook.event in TOOL_EVENTS else ""
        lines.append(f"{hook.event}{matcher}: `{hook.name}` (timeout {hook.timeout:g} s; {where})")
    return lines


APPROVAL_CHOICES = Choices("Approve this command", "Do not run it", "Not run: you did not approve the project's hook.",
                           "Not run: the question about the project's hook was cancelled.")


def build_session_hooks(runtime: Runtime, state: SessionState, gate: PermissionGate, notify: Callable[[str], None],
                        tool_context: Callable[[str, str], ToolContext], registry: Callable[[], ToolRegistry],
                        trusted: Callable[[], bool]) -> SessionHooks:
    """A session's hooks, asking through its gate and exporting its conversation for the hooks to read."""
    session_id, cwd = state.id, state.cwd

    async def approve(hook: Hook) -> bool:
        import uuid

        ctx = tool_context(f"hook-approval-{uuid.uuid4()}", "Approve a project hook")
        try:
            await gate.authorize(ctx, Confirm(
                f"Run the project's {hook.event} hook `{hook.name}`?",
                "This workspace's .hermes/config.yaml asks to run this command with your rights, outside the "
                "sandbox. Approved once, it runs from now on until its command changes.", hook.command,
                APPROVAL_CHOICES))
        except PermissionDenied:
            notify(f"The project's hook `{hook.name}` will not run in this session.")
            return False
        return True

    def names(name: str) -> tuple[str, ...]:
        tool = registry().get(name)
        return tool_names(name, tool.claude_names if tool is not None else ())

    written: list[tuple[int, int]] = []  # (transcript, messages) last written: a call's Pre and Post share one

    def transcript() -> Path | None:
        import json

        from acp_hermes_memory.fs import atomic_write_text

        path = runtime.paths.own / "hooks" / "transcripts" / f"{session_id}.jsonl"
        now = (id(state.transcript), len(state.transcript.messages))
        if written and written[-1] == now and path.exists():
            return path
        try:
            rows = runtime.db.conversation(session_id)
            lines = (json.dumps({"type": row.role, "session_id": row.session_id, "timestamp": row.timestamp,
                                 "tool_name": row.tool_name, "content": row.content}, ensure_ascii=False)
                     for row in rows)
            atomic_write_text(path, "".join(f"{line}\n" for line in lines), mode=0o600, private=True)
            written[:] = [now]
        except OSError as error:
            log.warning("session %s: the conversation could not be exported for hooks: %s", session_id, error)
            return None
        return path

    return SessionHooks(runtime.settings, session_id, cwd, HookApprovals(runtime.paths.own / "hook_approvals.json"),
                        gate, notify, approve, transcript, names, runtime.paths.own,
                        subagent=state.subagent is not None, trusted=trusted)
