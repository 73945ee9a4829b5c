"""``delegate_task``: child agents with a fresh context, a restricted toolset and the parent's safety.

The parent model hands over one task (``goal``, optional ``context``, ``toolsets``,
``max_iterations``) or a batch (``tasks``), run at most ``delegation.max_concurrent`` at once.
Each child is a session of its own (``SessionManager.create_child``): stored with its parent's id
and source ``subagent``, a system prompt without SOUL.md or memory, the parent's mode, model and
session grants, and only the tools of its toolsets (``Tool.toolsets``; never a tool a child may not
have, ``Tool.delegable``: ``clarify``, ``memory``, ``skill_manage``; ``delegate_task`` only above
``delegation.max_depth``). Its questions go to the user on the parent's session, titled with its
task. The parent's turn waits for every child; what the parent model gets back is each child's
final answer (capped), or why it has none.

What the editor sees: ``ChildStarted``/``ChildEvent``/``ChildEnded`` on the parent's sink (a
client that shows child sessions renders those), and in every client the delegate call's own
card: kind ``other`` (work, not a thought: agent-shell folds a ``think`` call into its "Thought"
header), its title the running summary (``card_title``; most editors show only the title, or the
title until the card is opened), its content each child's current step, then the reports.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_hermes.core.events import (
    ChildEnded,
    ChildEvent,
    ChildStarted,
    Event,
    EventSink,
    TaskDelegated,
    ToolCallFinished,
    ToolCallStarted,
)
from acp_hermes.core.lineage import DELEGATE_TOOL_NAME, SubagentSpec
from acp_hermes.core.transcript import final_answer
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.types import Usage
from acp_hermes.permissions.gate import Asker, PermissionQuestion
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import TextDisplay, ToolCallUpdated
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult
from acp_hermes_tools.toolsets import TOOLSETS

if TYPE_CHECKING:
    from acp_hermes.core.session import Session

log = logging.getLogger(__name__)

MAX_TASKS = 10  # in one batch

_DESCRIPTION = (
    "Hand work to subagents: child agents that start with a fresh, empty conversation (they do not see "
    "this one), work with their own tools, and return only their final report, so your context stays "
    "small. Use it for self-contained work that needs many steps (investigate a bug, change one module, "
    "run and fix a test suite) or for independent tasks that can run in parallel.\n"
    "Either `goal` (one task) or `tasks` (a batch run in parallel, each with its own goal). Put everything "
    "the child needs into `goal` and `context`: file paths, what you already know, constraints, what the "
    "report should contain. Children use the same permissions and sandbox as you, cannot ask the user "
    "questions, and cannot change memory or skills. `toolsets` picks their tools: {toolsets}. This call returns "
    "when every child has finished."
)

_TASK_PROPERTIES: dict[str, Any] = {
    "goal": {"type": "string", "description": "What the child must do, self-contained."},
    "context": {"type": "string", "description": "What the child needs to know: paths, findings, constraints."},
    "toolsets": {"type": "array", "items": {"type": "string", "enum": list(TOOLSETS)},
                 "description": "The child's tools (default: the configured toolsets)."},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_TASK_PROPERTIES,
        "max_iterations": {
            "type": "integer", "minimum": 1,
            "description": "Model calls each child may make (default and maximum: the configured limit).",
        },
        "tasks": {"type": "array", "minItems": 1, "maxItems": MAX_TASKS,
                  "items": {"type": "object", "properties": _TASK_PROPERTIES, "required": ["goal"],
                            "additionalProperties": False},
                  "description": "Several independent tasks, run in parallel."},
    },
    "additionalProperties": False,
}

@value
class Task:
    goal: str
    context: str
    toolsets: tuple[str, ...]


@value
class ChildOutcome:
    """How one child ended, as the parent model and the stored call keep it."""

    session_id: str
    goal: str
    status: str  # completed, failed, cancelled, stopped (a limit)
    stop_reason: str
    answer: str
    usage: Usage
    detail: str = ""

    def report(self, limit: int) -> str:
        answer = self.answer.strip()
        if len(answer) > limit:
            answer = (f"{answer[:limit].rstrip()}\n[… the child's answer was {len(self.answer):,} characters: the "
                      f"first {limit:,} are shown; session_search finds the rest in session {self.session_id[:8]}]")
        heading = {"completed": "completed", "cancelled": "cancelled before it finished",
                   "failed": f"failed: {self.detail}", "stopped": f"stopped: {self.detail}"}[self.status]
        return f"{heading}\n\n{answer}" if answer else f"{heading} (no answer)"

    def raw(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "goal": self.goal, "status": self.status,
                "stop_reason": self.stop_reason, "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens}


def toolset_tools() -> dict[str, list[str]]:
    """Each toolset's tools, in the manifest's order: what they say of themselves (``Tool.toolsets``)."""
    from acp_hermes_tools import core_tools

    return {toolset: [tool.name for tool in core_tools() if toolset in tool.toolsets]
            for toolset in TOOLSETS}


def description() -> str:
    """The tool's description, naming each toolset's tools."""
    return _DESCRIPTION.format(toolsets=", ".join(f"{name} ({', '.join(tools)})"
                                                  for name, tools in toolset_tools().items()))


def tool_names_for(toolsets: Sequence[str], available: Sequence[str], *, may_delegate: bool) -> frozenset[str]:
    """The tools a child with ``toolsets`` gets, of those ``available`` (the parent's built-in tools):
    those in one of its toolsets that a child may have, and ``delegate_task`` when it ``may_delegate``."""
    from acp_hermes_tools import declared

    wanted = set(toolsets)
    names = {name for name in available
             if (tool := declared(name)) is not None and tool.delegable and wanted & set(tool.toolsets)}
    return frozenset(names | {DELEGATE_TOOL_NAME}) if may_delegate else frozenset(names)


def present_delegation(args: dict[str, Any], scope: ToolScope) -> Presentation:
    tasks = args.get("tasks")
    if isinstance(tasks, list) and tasks:
        return Presentation(f"Delegate {len(tasks)} task{'s' if len(tasks) != 1 else ''} to subagents")
    return Presentation(f"Delegate: {one_line(str(args.get('goal') or 'a task'), 80)}")


class ChildSessions(Protocol):
    """Who makes a delegated task's session and ends it (``core.sessions.SessionManager``), keeping it
    among its parent's running children meanwhile."""

    async def create_child(self, parent: Session, child_id: str, spec: SubagentSpec, sink: EventSink,
                           asker: Asker) -> Session: ...

    async def end_child(self, child_id: str) -> None: ...


def delegate_tool(parent: Callable[[], Session | None], children: ChildSessions) -> Tool:
    """The ``delegate_task`` tool of a session (``parent`` finds it while it is live): its handler runs
    that session's children, made and ended by ``children``."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        session = parent()
        if session is None:
            raise ToolError("the session that would delegate has ended")
        return await Delegation(session, children, ctx, _tasks(args, session), args.get("max_iterations")).run()

    return Tool(name=DELEGATE_TOOL_NAME, description=description(), schema=SCHEMA, handler=handler, kind="other",
                access=Access.READ, present=present_delegation, claude_names=("Task",))


_ENDED_AS = ("failed", "cancelled", "stopped")  # how a child may end short of completed, in the order named


def card_title(states: Sequence[str], step: str = "") -> str:
    """The delegate card's title: the running summary, then how the children ended.

    Written for the editors that show little else: no colon and no em dash in its fixed part
    (CodeCompanion's one-line label keeps only what comes before either), and ``step`` (the latest
    tool call of a running child) last.
    """
    total, running = len(states), states.count("running")
    done = sum(state not in ("queued", "running") for state in states)
    if total == 1:
        head = {"queued": "Subagent starting", "running": "Subagent running"}.get(states[0], f"Subagent {states[0]}")
    elif done < total:
        head = f"Subagents {running}/{total} running" + (f", {done} done" if done else "")
    else:
        short = [f"{count} {state}" for state in _ENDED_AS if (count := states.count(state))]
        return ", ".join([f"Subagents {total}/{total} done", *short])
    return f"{head} · {step}" if step and running else head


def _tasks(args: dict[str, Any], parent: Session) -> list[Task]:
    default = tuple(parent.services.settings.delegation.toolsets)
    if args.get("tasks") and args.get("goal"):
        raise ToolError("give either goal (one task) or tasks (a batch), not both")
    raw = args.get("tasks") or ([{key: args[key] for key in _TASK_PROPERTIES if key in args}] if args.get("goal")
                                else [])
    if not raw:
        raise ToolError("nothing to delegate: give goal (one task) or tasks (a batch)")
    tasks = []
    for item in raw:
        goal = str(item.get("goal") or "").strip()
        if not goal:
            raise ToolError("every task needs a goal")
        tasks.append(Task(goal, str(item.get("context") or "").strip(), tuple(item.get("toolsets") or default)))
    return tasks


class _ChildSink:
    """A child session's event sink: forwards each event to the parent's sink as a ``ChildEvent`` and
    keeps the delegate card's line for the child current."""

    def __init__(self, delegation: Delegation, index: int, child_id: str) -> None:
        self._delegation = delegation
        self._index = index
        self.child_id = child_id

    async def emit(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            await self._delegation.step(self._index, f"`{event.name}`: {one_line(event.title, 70)}",
                                        one_line(event.title, 60))
        elif isinstance(event, ToolCallFinished) and event.status == "failed":
            await self._delegation.step(self._index, "a tool call failed; going on")
        await self._delegation.parent.services.emit(ChildEvent(self.child_id, event))


class _TaskAsker:
    """The parent's asker, with the child's task in front of each question's title."""

    def __init__(self, asker: Asker, label: str) -> None:
        self._asker = asker
        self._label = label

    async def ask(self, question: PermissionQuestion) -> str:
        return await self._asker.ask(PermissionQuestion(question.call_id, f"{self._label}: {question.title}",
                                                        question.kind, question.display, question.options))


class Delegation:
    """One ``delegate_task`` call: its children, run and reported."""

    def __init__(self, parent: Session, children: ChildSessions, ctx: ToolContext, tasks: list[Task],
                 max_iterations: int | None) -> None:
        settings = parent.services.settings.delegation
        self.parent = parent
        self._children = children
        self._ctx = ctx
        self._tasks = tasks
        self._max_iterations = min(max_iterations or settings.max_iterations, settings.max_iterations)
        self._steps = ["queued"] * len(tasks)
        self._states = ["queued"] * len(tasks)
        self._latest: dict[int, str] = {}  # each child's latest tool call title, the most recent last
        self._outcomes: list[ChildOutcome | None] = [None] * len(tasks)
        self._epoch = parent.cancel_epoch  # the parent's cancel (or close) since this call began ends every child

    async def run(self) -> ToolResult:
        limiter = anyio.CapacityLimiter(self.parent.services.settings.delegation.max_concurrent)
        await self._show()
        try:
            async with anyio.create_task_group() as group:
                for index in range(len(self._tasks)):
                    group.start_soon(self._run_child, index, limiter)
        finally:
            if "queued" in self._states:  # cancelled before they began: the card's last title says so
                self._states = ["cancelled" if state == "queued" else state for state in self._states]
                with anyio.CancelScope(shield=True):
                    await self._show()
        return self._result()

    async def step(self, index: int, text: str, title: str = "") -> None:
        if self._steps[index] != text:
            self._steps[index] = text
            if title:
                self._latest.pop(index, None)
                self._latest[index] = title
            await self._show()

    async def _show(self) -> None:
        """The delegate card: the summary as its title; how many children run, and each one's task
        and current step, as its content."""
        running = self._states.count("running")
        done = sum(state not in ("queued", "running") for state in self._states)
        head = f"{running}/{len(self._tasks)} running" + (f", {done} done" if done else "")
        lines = [head]
        for number, (task, state, step) in enumerate(zip(self._tasks, self._states, self._steps, strict=True), 1):
            detail = step if state == "running" else state
            lines.append(f"{number}. {one_line(task.goal, 70)} — {detail}")
        await self._ctx.emit(ToolCallUpdated(self._ctx.call_id, display=(TextDisplay("\n".join(lines)),),
                                             title=card_title(self._states, self._running_step())))

    def _running_step(self) -> str:
        """The title of the tool call a running child started last ("" before any)."""
        return next((title for index, title in reversed(self._latest.items())
                     if self._states[index] == "running"), "")

    async def _run_child(self, index: int, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:  # a queued child is cancelled while it waits; a running one ends itself
            if self._cancelled():
                return
            with anyio.CancelScope(shield=True):
                self._outcomes[index] = await self._child(index)

    async def _child(self, index: int) -> ChildOutcome:
        task = self._tasks[index]
        parent, services = self.parent, self.parent.services
        settings = services.settings.delegation
        child_id = str(uuid.uuid4())
        depth = parent.state.depth + 1
        names = tool_names_for(task.toolsets, services.base_tool_names(), may_delegate=depth < settings.max_depth)
        title = one_line(task.goal, 80)
        spec = SubagentSpec(depth, title, names, self._max_iterations, services.gate.session)
        await services.emit(ChildStarted(self._ctx.call_id, child_id, title, _description(task)))
        self._states[index], self._steps[index] = "running", "starting"
        await self._show()
        label = f"Subagent {index + 1}" + (f"/{len(self._tasks)}" if len(self._tasks) > 1 else "") + f" ({title})"
        outcome = ChildOutcome(child_id, task.goal, "failed", "end_turn", "", Usage(), "it could not start")
        try:  # the manager keeps the child among the parent's running children: the parent's cancel reaches it
            child = await self._children.create_child(
                parent, child_id, spec, _ChildSink(self, index, child_id), _TaskAsker(services.gate.asker, label))
            stop = "cancelled" if self._cancelled() else await child.prompt([TextPart(_prompt(task))])
            outcome = _outcome(child, task, stop)
        except Exception as error:  # one child's failure must not take the batch down
            log.exception("subagent %s failed", child_id)
            outcome = ChildOutcome(child_id, task.goal, "failed", "end_turn", "", Usage(),
                                   f"{type(error).__name__}: {error}")
        finally:
            await self._children.end_child(child_id)
        self._states[index] = outcome.status
        await services.emit(ChildEnded(child_id, outcome.stop_reason, outcome.usage,
                                       outcome.detail if outcome.status == "failed" else None))
        services.publish(TaskDelegated(task.goal, outcome.answer, child_id))
        await self._show()
        return outcome

    def _cancelled(self) -> bool:
        return self.parent.closed or self.parent.cancel_epoch != self._epoch

    def _result(self) -> ToolResult:
        limit = self.parent.services.settings.delegation.result_max_chars
        outcomes = [outcome or ChildOutcome("", task.goal, "cancelled", "cancelled", "", Usage())
                    for task, outcome in zip(self._tasks, self._outcomes, strict=True)]
        if len(outcomes) == 1:
            text = f"Subagent {outcomes[0].report(limit)}"
        else:
            text = "\n\n".join(f"## Task {number}/{len(outcomes)}: {one_line(outcome.goal, 100)}\n"
                               f"{outcome.report(limit)}" for number, outcome in enumerate(outcomes, 1))
        ok = any(outcome.status in ("completed", "stopped") for outcome in outcomes)
        return ToolResult(text, ok=ok, display=(TextDisplay(text),),
                          raw_output={"children": [outcome.raw() for outcome in outcomes]})


def _description(task: Task) -> str:
    return one_line(task.context, 200) if task.context else f"Tools: {', '.join(task.toolsets)}"


def _prompt(task: Task) -> str:
    if not task.context:
        return task.goal
    return f"{task.goal}\n\nContext from the parent agent:\n{task.context}"


def _outcome(child: Session, task: Task, stop: str) -> ChildOutcome:
    turn = child.state.last_turn
    usage = turn.usage if turn is not None else Usage()
    answer = final_answer(child.state.transcript.messages)
    if turn is not None and turn.failure:
        return ChildOutcome(child.id, task.goal, "failed", stop, answer, usage, turn.failure)
    if stop == "cancelled":
        return ChildOutcome(child.id, task.goal, "cancelled", stop, answer, usage)
    if stop == "max_turn_requests":
        from acp_hermes.core.turn import max_iterations

        calls = max_iterations(child.state, child.services)
        detail = f"it used all {calls} model call{'s' if calls != 1 else ''} it was given"
        return ChildOutcome(child.id, task.goal, "stopped", stop, answer, usage, detail)
    if stop in ("max_tokens", "refusal"):
        return ChildOutcome(child.id, task.goal, "stopped", stop, answer, usage, stop.replace("_", " "))
    return ChildOutcome(child.id, task.goal, "completed", stop, answer, usage)
