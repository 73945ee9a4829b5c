"""The client end of the connection, as the core needs it: where a session's events go, who
answers its permission questions, and the editor that does its file and command I/O.

Everything here speaks ACP on the core's behalf: events become ``session/update``s, permission
questions ``session/request_permission``, a tool's question to the user ``elicitation/create``,
reads and writes ``fs/*`` and commands ``terminal/*``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError

from acp_hermes.adapter.launchers import SHELL, LaunchScripts, shown
from acp_hermes.adapter.render import (
    async_task_progress,
    async_task_spawned,
    async_task_state,
    locations,
    quota_update,
    render_notice,
    render_update,
    subagent_ended,
    subagent_started,
    tool_content,
)
from acp_hermes.adapter.sdk import transport_of
from acp_hermes.core.events import (
    ChildEnded,
    ChildEvent,
    ChildStarted,
    Event,
    JobFinished,
    Notice,
    QuotaChanged,
    ToolCallFinished,
    ToolCallStarted,
)
from acp_hermes.permissions.gate import CANCELLED, REJECT_ONCE, PermissionQuestion
from acp_hermes_memory.fs import check_unchanged
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import (
    Answer,
    CommandObserver,
    CommandOutcome,
    CommandRequest,
    DiffDisplay,
    Display,
    EditorRefused,
    Location,
    PermissionDenied,
    Question,
    TerminalDisplay,
    TextDisplay,
)
from acp_hermes_tools.local_io import LocalEditor

if TYPE_CHECKING:
    from acp.connection import Connection

    from acp_hermes.core.trust import WorkspaceQuestion

log = logging.getLogger(__name__)

_MTIME_SLACK = 1.0
TERMINAL_ECHO_CHARS = 60_000  # of a command's output repeated in its tool call's rawOutput; the newest kept
_TERMINAL_OUTPUTS_KEPT = 16  # outputs waiting for their call to finish (a cancelled call never collects its own)


class ClientLink:
    """Raw JSON-RPC to the client over the SDK's engine (plain dicts in and out)."""

    def __init__(self, engine: Connection) -> None:
        self._engine = engine

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self._engine.send_request(method, params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._engine.send_notification(method, params)

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.notify("session/update", {"sessionId": session_id, "update": update})

    async def updates(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        """Many ``session/update``s in a few large writes (a session/load replays thousands)."""
        await transport_of(self._engine).send_notifications(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
            for update in updates
        )


class ClientView:
    """What the client has been shown of one session, for the messages that must agree with it.

    The permission request for a call repeats the call's kind and locations as last shown (its
    title is the call's own, with the reason for asking; CodeCompanion titles its approval from the
    locations); the plan goes out only when it
    changed; and the output of a command run in a client terminal is kept until its call finishes,
    so the final update can carry it in ``rawOutput.output`` for clients that show terminal content
    as nothing but its id (acpx). The call's content is left alone: Zed shows the terminal itself, and
    shows a ``rawOutput`` only for a call without content.
    """

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}  # open calls: their tool_call fields as last sent
        self.plan: Any = None  # the entries of the last plan update sent
        self.terminal_output: dict[str, str] = {}  # terminal id -> the output of the command it ran

    def shown(self, update: dict[str, Any]) -> bool:
        """Note ``update`` as sent; False when it would repeat what the client already has."""
        kind = update["sessionUpdate"]
        if kind == "plan":
            if update["entries"] == self.plan:
                return False
            self.plan = update["entries"]
        elif kind == "tool_call":
            self.calls[update["toolCallId"]] = {key: update[key] for key in _SHOWN_FIELDS if key in update}
        elif kind == "tool_call_update":
            call = self.calls.get(update["toolCallId"])
            if call is not None:
                call.update({key: update[key] for key in _SHOWN_FIELDS if key in update})
        return True

    def finished(self, call_id: str, display: tuple[Display, ...]) -> str | None:
        """Forget a finished call; the output of the commands it ran in client terminals, if any."""
        self.calls.pop(call_id, None)
        outputs = [self.terminal_output.pop(item.terminal_id) for item in display
                   if isinstance(item, TerminalDisplay) and item.terminal_id in self.terminal_output]
        return "".join(outputs) if outputs else None

    def ran(self, terminal_id: str, output: str) -> None:
        while len(self.terminal_output) >= _TERMINAL_OUTPUTS_KEPT:
            self.terminal_output.pop(next(iter(self.terminal_output)))
        if len(output) > TERMINAL_ECHO_CHARS:
            output = "[… earlier output not shown …]\n" + output[-TERMINAL_ECHO_CHARS:]
        self.terminal_output[terminal_id] = output


_SHOWN_FIELDS = ("kind", "locations")  # the title asked with adds the reason to the call's own


class SessionUpdates:
    """The event sink of one session: every event becomes a ``session/update``.

    Its children's events (``core.delegation``) go out only to a client that shows them
    (``shows_subagents``): each child announced with ``subagent_update`` on this session before anything
    names it, its own events as updates of the child's session, its end as one idle state. Any
    other client follows the children on the delegate call's card.
    """

    def __init__(self, link: ClientLink, session_id: str, view: ClientView | None = None, *,
                 subagents: bool = False, notices: bool = False, quotas: bool = False,
                 tasks: bool = False) -> None:
        self._link = link
        self._session_id = session_id
        self.view = view or ClientView()
        self._subagents = subagents
        self._notices = notices
        self._quotas = quotas
        self._tasks = AsyncTasks(self._send) if tasks else None
        self._children: dict[str, SessionUpdates] = {}

    async def emit(self, event: Event) -> None:
        if isinstance(event, ChildStarted | ChildEvent | ChildEnded):
            if self._subagents:
                await self._child(event)
            elif self._tasks is not None:
                await self._tasks.child(event)
            return
        if isinstance(event, Notice):
            shown = render_notice(event, self._notices)
            if shown is not None:
                await self._send(shown)
            return
        if isinstance(event, QuotaChanged):
            if self._quotas:
                await self._send(quota_update(event))
            return
        if isinstance(event, JobFinished):
            if self._tasks is not None:
                await self._tasks.job_finished(event)
            return
        update = render_update(event)
        if isinstance(event, ToolCallFinished):
            output = self.view.finished(event.call_id, event.display)
            if output is not None:
                raw = event.raw_output if isinstance(event.raw_output, dict) else {}
                update["rawOutput"] = {**raw, "output": output}
        if not self.view.shown(update):
            return
        await self._send(update)
        if self._tasks is not None:
            await self._tasks.tool_event(event)

    async def _send(self, update: dict[str, Any]) -> None:
        try:
            await self._link.update(self._session_id, update)
        except ConnectionError:
            log.debug("client gone; dropped %s", update["sessionUpdate"])

    async def _child(self, event: ChildStarted | ChildEvent | ChildEnded) -> None:
        if isinstance(event, ChildStarted):
            self._children[event.child_id] = SessionUpdates(self._link, event.child_id, subagents=True,
                                                            notices=self._notices, quotas=self._quotas)
            await self._send(subagent_started(event))
        elif isinstance(event, ChildEvent):
            child = self._children.get(event.child_id)
            if child is not None:
                await child.emit(event.event)
        elif self._children.pop(event.child_id, None) is not None:
            await self._send(subagent_ended(event))


class AsyncTasks:
    """JetBrains AIR's async tasks for one session (``asyncTasks``): each background job and each
    delegated child announced as it starts (``async_task_spawned``, its tool call named), a child's
    tool calls as its progress, and one terminal state each. The job's card and the delegate call's
    card stay as they are; the task list is beside them."""

    def __init__(self, send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self._send = send
        self._commands: dict[str, str] = {}  # terminal calls still running: their command lines
        self._running: set[str] = set()  # announced tasks without a terminal state yet

    async def tool_event(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted) and isinstance(event.raw_input, dict):
            command = event.raw_input.get("command")  # a call that may start a job: its command line
            if isinstance(command, str):
                self._commands[event.call_id] = command
        elif isinstance(event, ToolCallFinished):
            command = self._commands.pop(event.call_id, "")
            raw = event.raw_output if isinstance(event.raw_output, dict) else {}
            job_id = raw.get("job_id")
            if raw.get("background") is True and isinstance(job_id, str) and event.status == "completed":
                self._running.add(job_id)
                await self._send(async_task_spawned(job_id, _one_line(command) or job_id, "shell", command or job_id,
                                                    event.call_id))

    async def job_finished(self, event: JobFinished) -> None:
        if event.job_id in self._running:
            self._running.discard(event.job_id)
            await self._send(async_task_state(event.job_id, event.state, event.summary))

    async def child(self, event: ChildStarted | ChildEvent | ChildEnded) -> None:
        if isinstance(event, ChildStarted):
            self._running.add(event.child_id)
            await self._send(async_task_spawned(event.child_id, event.title, "agent", event.description,
                                                event.call_id))
        elif isinstance(event, ChildEvent):
            inner = event.event
            if event.child_id in self._running and isinstance(inner, ToolCallStarted):
                await self._send(async_task_progress(event.child_id, inner.name))
        elif event.child_id in self._running:
            self._running.discard(event.child_id)
            state = ("failed" if event.failure is not None else
                     "stopped" if event.stop_reason == "cancelled" else "completed")
            await self._send(async_task_state(event.child_id, state, event.failure))


def _one_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class PermissionRequests:
    """Asks the user through ``session/request_permission`` (same toolCallId as the call); questions
    about the workspace (``core.trust``) the best way the client allows."""

    def __init__(self, link: ClientLink, session_id: str, view: ClientView | None = None,
                 abilities: ClientAbilities | None = None) -> None:
        self._link = link
        self._session_id = session_id
        self._view = view or ClientView()
        self._abilities = abilities or ClientAbilities()

    def tool_call(self, question: PermissionQuestion) -> dict[str, Any]:
        """The call asked about, as the tool call itself shows it (kind, locations; the title is the
        call's own with the reason for asking), with what is asked for as its content. Without
        locations of its own, the files it would change."""
        shown = self._view.calls.get(question.call_id, {})
        call: dict[str, Any] = {"toolCallId": question.call_id, "title": question.title, "kind": question.kind,
                                **shown, "status": "pending",
                                "content": [tool_content(item) for item in question.display]}
        if not call.get("locations"):
            changed = locations(tuple(Location(path) for path in dict.fromkeys(
                item.path for item in question.display if isinstance(item, DiffDisplay))))
            if changed:
                call["locations"] = changed
            else:
                call.pop("locations", None)
        return call

    async def ask(self, question: PermissionQuestion) -> str:
        """The option the user chose; an editor that answers with an error (or with an answer too deep to
        read) fails the question at once, ``PermissionDenied`` with its reason: the call does not run."""
        params = {
            "sessionId": self._session_id,
            "toolCall": self.tool_call(question),
            "options": [
                {"optionId": option.option_id, "name": option.label, "kind": option.option_id}
                for option in question.options
            ],
        }
        try:
            result = await self._link.request("session/request_permission", params)
        except ConnectionError as exc:  # the editor is gone: nobody is there to tell
            log.warning("permission request failed (%s); treating it as cancelled", exc)
            return CANCELLED
        except RequestError as exc:  # an error for an answer, or one the transport could not read
            raise _unanswered(question, editor_reason(exc)) from None
        outcome = result.get("outcome") if isinstance(result, dict) else None
        outcome = outcome if isinstance(outcome, dict) else {}
        if outcome.get("outcome") == "selected":
            return str(outcome.get("optionId", ""))  # an option that was not offered counts as a rejection
        if outcome.get("outcome") == "cancelled":
            return CANCELLED
        raise _unanswered(question, "its answer has no outcome of a known kind")


    async def ask_workspace(self, question: WorkspaceQuestion) -> str | None:
        """A question about the workspace, not a tool call: for a client with its own trust dialog,
        none (it tells its decision with ``_trust/decision``); else one form where the client has
        forms; else a permission request on a card of its own, shown and ended like a tool call's."""
        if question.kind == "trust" and self._abilities.workspace_trust:
            return None
        if self._abilities.forms:
            chosen = await self._form(question)
            if chosen is not None:
                return chosen
        return await self._on_card(question)

    async def _form(self, question: WorkspaceQuestion) -> str | None:
        """The option picked in an ``elicitation/create`` form; None when the client did not show it."""
        offered = {option.option_id for option in question.options}
        schema = {"type": "object", "required": [DECISION_FIELD], "properties": {DECISION_FIELD: {
            "type": "string", "title": "Your answer",
            "oneOf": [{"const": option.option_id, "title": option.label} for option in question.options]}}}
        params = {"sessionId": self._session_id, "mode": "form", "message": f"**{question.title}**\n\n{question.text}",
                  "requestedSchema": schema}
        try:
            result = await self._link.request("elicitation/create", params)
        except (RequestError, ConnectionError) as exc:
            log.warning("the editor did not show the form (%s); asking with a permission request", exc)
            return None
        response = result if isinstance(result, dict) else {}
        if response.get("action") == "accept":
            content = response.get("content")
            chosen = content.get(DECISION_FIELD) if isinstance(content, dict) else None
            return chosen if chosen in offered else REJECT_ONCE
        return REJECT_ONCE if response.get("action") == "decline" else CANCELLED

    async def _on_card(self, question: WorkspaceQuestion) -> str:
        asked = question.as_permission()
        labels = {option.option_id: option.label for option in question.options}
        try:
            await self._link.update(self._session_id, {
                "sessionUpdate": "tool_call", "toolCallId": asked.call_id, "title": asked.title, "kind": "other",
                "status": "pending", "rawInput": dict(question.raw),
                "content": [tool_content(item) for item in asked.display]})
        except ConnectionError:
            return CANCELLED
        status, said = "failed", "No answer could be read from the editor."
        try:
            chosen = await self.ask(asked)
            status, said = "completed", f"Your answer: {labels.get(chosen, 'none (cancelled)')}."
            return chosen
        finally:
            try:
                await self._link.update(self._session_id, {
                    "sessionUpdate": "tool_call_update", "toolCallId": asked.call_id, "status": status,
                    "content": [tool_content(TextDisplay(said))]})
            except ConnectionError:
                log.debug("client gone; the workspace question's card was not closed")


DECISION_FIELD = "decision"  # the one field of a workspace question's form


def _unanswered(question: PermissionQuestion, reason: str) -> PermissionDenied:
    """The question failed in the editor: the call does not run, and the user and the model are told why."""
    log.warning("permission request for call %s failed: %s", question.call_id, reason)
    return PermissionDenied(f"No answer to the permission question could be read from the editor ({reason}); "
                            "the action did not run.")


@value
class ClientAbilities:
    """What the client said it can do in ``initialize``."""

    read_files: bool = False
    write_files: bool = False
    terminals: bool = False
    forms: bool = False  # form elicitation: questions to the user while a turn waits
    workspace_trust: bool = False  # shows its own workspace trust dialog (``adapter.trust``)
    subagents: bool = False  # shows child sessions (``shows_subagents``): subagent_update and their own updates
    notices: bool = False  # shows ``notice`` updates (unstable ``session.notices``): else they are agent messages
    quotas: bool = False  # shows quotas (``session.quotas``): quota_update, quota/read, the quotaExceeded error
    air: frozenset[str] = frozenset()  # the JetBrains AIR extensions it takes (``air_capabilities``)


# JetBrains AIR says in ``clientCapabilities._meta.jetbrains.air`` ({version, capabilities: [...]}) what
# it renders, in the shape claude-agent-acp and codex-acp read it in: child sessions, background work as
# async tasks, the report of the files a turn changed.
AIR_NATIVE_SUBAGENTS = "nativeSubagentSessions"
AIR_ASYNC_TASKS = "asyncTasks"
AIR_FILE_CHANGE_REPORT = "agentFileChangeReport"


def air_capabilities(capabilities: Any) -> frozenset[str]:
    """The AIR extensions ``initialize``'s raw ``clientCapabilities`` list: none unless it is AIR
    version 1 or later (a whole number, as the adapters that read it take it)."""
    if not isinstance(capabilities, dict):
        return frozenset()
    air = _field(_field(_field(capabilities, "_meta"), "jetbrains"), "air")
    version, advertised = air.get("version"), air.get("capabilities")
    if not isinstance(version, int | float) or isinstance(version, bool) or not float(version).is_integer():
        return frozenset()
    if version < 1 or not isinstance(advertised, list):
        return frozenset()
    return frozenset(item for item in advertised if isinstance(item, str))


def shows_subagents(capabilities: Any) -> bool:
    """Whether ``initialize``'s raw ``clientCapabilities`` ask for children as sessions of their own:
    the unstable ``subagents`` capability (an object; ``null`` is no), or AIR listing
    ``nativeSubagentSessions``. Read raw: the SDK's model drops ``subagents``."""
    if isinstance(capabilities, dict) and isinstance(capabilities.get("subagents"), dict):
        return True
    return AIR_NATIVE_SUBAGENTS in air_capabilities(capabilities)


def session_capability(capabilities: Any, name: str) -> bool:
    """Whether the raw ``clientCapabilities.session`` advertises ``name`` (an object; ``null`` is no):
    ``notices`` (unstable schema 1.22+) and ``quotas`` (the Quotas and Limits RFD)."""
    session = _field(capabilities, "session") if isinstance(capabilities, dict) else {}
    return isinstance(session.get(name), dict)


def _field(value: dict[str, Any], key: str) -> dict[str, Any]:
    found = value.get(key)
    return found if isinstance(found, dict) else {}


class ClientEditor(LocalEditor):
    """Routes I/O through the ACP client where it offers to, else falls back to local.

    Reads through ``fs/read_text_file`` see unsaved buffers; writes through
    ``fs/write_text_file`` land in the editor's buffers and review UI; commands run in the
    client's terminals, titled with the user's command line (``adapter.launchers``). One catch:
    after our own shell command changes a file on disk, the editor's buffer may still hold the
    old text. So a file is read from disk when a command started after we last saw it through the
    editor and the file changed on disk since.
    """

    def __init__(self, link: ClientLink, session_id: str, abilities: ClientAbilities,
                 view: ClientView | None = None, launchers: LaunchScripts | None = None) -> None:
        super().__init__()
        self._client = link
        self._session_id = session_id
        self.abilities = abilities
        self._view = view or ClientView()
        self._launchers = launchers  # None: the terminal gets the whole (wrapped) command line
        self._seen: dict[Path, float] = {}  # when we last read or wrote the file via the editor

    def _changed_by_command(self, path: Path) -> bool:
        started = self.last_command_started
        if started is None or self._seen.get(path, float("-inf")) > started:
            return False
        try:
            return path.stat().st_mtime >= started - _MTIME_SLACK
        except OSError:
            return False

    async def read_text(self, path: Path) -> str:
        if not self.abilities.read_files or self._changed_by_command(path):
            return await super().read_text(path)
        try:
            result = await self._client.request(
                "fs/read_text_file", {"sessionId": self._session_id, "path": str(path)}
            )
        except RequestError as exc:
            if not path.exists():
                raise FileNotFoundError(2, "No such file", str(path)) from exc
            raise EditorRefused(f"the editor did not read {path}: {editor_reason(exc)}") from None
        self._seen[path] = time.time()
        return str((result or {}).get("content", ""))

    async def write_text(self, path: Path, content: str) -> None:
        if not self.abilities.write_files:
            await super().write_text(path, content)
            return
        await anyio.to_thread.run_sync(check_unchanged, path)  # the editor writes; this is as late as we see it
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            await self._client.request(
                "fs/write_text_file", {"sessionId": self._session_id, "path": str(path), "content": content}
            )
        except RequestError as exc:
            raise EditorRefused(f"the editor did not write {path}: {editor_reason(exc)}") from None
        self._seen[path] = time.time()

    async def ask_user(self, question: Question) -> Answer | None:
        """Ask through an ``elicitation/create`` form tied to the call; None when the client has no
        forms or refused this one (the question is then asked in the chat)."""
        if not self.abilities.forms:
            return None
        params = {"sessionId": self._session_id, "toolCallId": question.call_id, "mode": "form",
                  "message": question.text, "requestedSchema": answer_form(question.choices)}
        try:
            result = await self._client.request("elicitation/create", params)
        except (RequestError, ConnectionError) as exc:
            log.warning("the editor did not show the question (%s); asking in the chat", exc)
            return None
        return read_answer(result)

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        if not self.abilities.terminals:
            return await super().run_command(request, observer)
        self.last_command_started = time.time()
        argv = self.argv(request.command, request.confinement)
        script = await self._launch_script(argv, sandboxed=request.confinement is not None)
        try:
            if script is None:
                return await self._run_in_terminal(request, observer, argv[0], argv[1:])
            return await self._run_in_terminal(request, observer, SHELL, [str(script), shown(request.command)])
        finally:
            if script is not None:  # after the command ended (or never started): nothing reads it any more
                LaunchScripts.remove(script)

    async def _launch_script(self, argv: list[str], *, sandboxed: bool) -> Path | None:
        if self._launchers is None:
            return None
        try:
            return await anyio.to_thread.run_sync(functools.partial(self._launchers.write, argv, sandboxed=sandboxed))
        except OSError as exc:
            log.warning("no launch script (%s): the terminal is titled with the whole command line", exc)
            return None

    async def _run_in_terminal(self, request: CommandRequest, observer: CommandObserver, command: str,
                               args: list[str]) -> CommandOutcome:
        try:
            created = await self._client.request(
                "terminal/create",
                {
                    "sessionId": self._session_id,
                    "command": command,
                    "args": args,
                    "cwd": str(request.cwd),
                    "outputByteLimit": request.output_limit,
                },
            )
        except RequestError as exc:
            raise EditorRefused(f"the editor did not start the command: {editor_reason(exc)}") from None
        terminal = {"sessionId": self._session_id, "terminalId": created["terminalId"]}
        await observer.on_terminal(created["terminalId"])
        timed_out = False
        try:
            with anyio.move_on_after(request.timeout) as deadline:
                exit_status = await self._client.request("terminal/wait_for_exit", terminal)
            if deadline.cancelled_caught:
                timed_out = True
                await self._client.request("terminal/kill", terminal)
            output = await self._client.request("terminal/output", terminal)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._client.request("terminal/kill", terminal)
            raise
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await self._client.request("terminal/release", terminal)
                except Exception as exc:
                    log.debug("terminal/release failed: %s", exc)
        status = output.get("exitStatus") or (exit_status if not timed_out else None) or {}
        self._view.ran(created["terminalId"], output.get("output", ""))
        return CommandOutcome(
            output=output.get("output", ""),
            exit_code=None if timed_out else status.get("exitCode"),
            signal=status.get("signal"),
            timed_out=timed_out,
            truncated=bool(output.get("truncated")),
            terminal_id=created["terminalId"],
            sandboxed=request.confinement is not None,
        )


ANSWER_FIELD = "answer"  # the free-text answer
CHOICE_FIELD = "choice"  # one of the suggested answers


def answer_form(choices: tuple[str, ...]) -> dict[str, Any]:
    """The form's schema: a free-text answer, and with choices a pick among them beside it (either will do)."""
    if not choices:
        return {"type": "object", "properties": {ANSWER_FIELD: {"type": "string", "title": "Your answer"}},
                "required": [ANSWER_FIELD]}
    options = [{"const": choice, "title": choice} for choice in choices]
    return {"type": "object", "properties": {
        CHOICE_FIELD: {"type": "string", "title": "Choose", "oneOf": options},
        ANSWER_FIELD: {"type": "string", "title": "Or answer in your own words"},
    }}


def read_answer(result: Any) -> Answer:
    """The user's answer from an elicitation response: their own words win over a picked choice."""
    response = result if isinstance(result, dict) else {}
    action = response.get("action")
    if action == "accept":
        content = response.get("content")
        if not isinstance(content, dict):
            content = {}
        for field in (ANSWER_FIELD, CHOICE_FIELD):
            text = _as_text(content.get(field)).strip()
            if text:
                return Answer("answered", text)
        return Answer("answered")
    return Answer("declined") if action == "decline" else Answer("dismissed")  # cancel, or an unknown action


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return "" if value is None else str(value)


def editor_reason(error: RequestError) -> str:
    """The most specific reason an editor gave for an error answer (its data often says more
    than a generic "Internal error")."""
    data = error.data
    if isinstance(data, str) and data.strip():
        return data.strip()
    if isinstance(data, dict):
        for key in ("details", "message", "reason", "error"):
            if isinstance(data.get(key), str) and data[key].strip():
                return str(data[key]).strip()
    return str(error) or f"error {error.code}"
