"""The learning loop: nudges that start a background review of the conversation.

Every ``memory_nudge_interval`` user turns (memory) and ``skill_nudge_interval`` tool-using model
calls (skills), after the turn has ended, a separate agent gets a snapshot of the conversation,
only the tools that say a review may use them (``Tool.reviewed``: the memory and skill tools), at
most ``MAX_REVIEW_CALLS`` model calls and no nudges of its own, and is asked whether anything is
worth keeping. It runs beside the session: it never holds the session's turn, never changes its
frozen prompt, and is cancelled with it. A counter resets when the agent uses a tool that saves
that kind of thing (``Tool.saves``: notes, skills) of its own accord.

Nothing it does is silent: each of its calls is shown in the session as a tool call (titled
"Review: …") and stored so ``session/load`` replays it. Its writes pass the same locks and
scanning as any, and a gate of its own: in ``accept-edits`` and ``bypass`` they are applied; in
``default`` mode they are held as proposals, and at the start of the user's next prompt each is
put to the user with its diff (the usual permission question) and applied only if allowed; in
``plan`` mode nothing is written.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_hermes.core.events import Event, EventSink, ToolCallFinished, ToolCallStarted
from acp_hermes.core.transcript import ToolOutcome, Transcript
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.messages import Message, Text
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value
from acp_hermes_tools.context import CommandPermit, ReadPurpose, ToolContext
from acp_hermes_tools.contracts import Display, FileChange, PermissionDenied

if TYPE_CHECKING:
    from acp_hermes.core.loop import TurnSettings
    from acp_hermes.model.types import Provider, Usage
    from acp_hermes.permissions.gate import PermissionGate
    from acp_hermes_tools.context import ToolScope
    from acp_hermes_tools.contracts import Editor, JobHandle, ToolEventSink
    from acp_hermes_tools.registry import ToolRegistry

log = logging.getLogger(__name__)

MAX_REVIEW_CALLS = 8

MEMORY_REVIEW = (
    "Look back over the conversation above for facts worth keeping beyond this session: who the user "
    "is and how they like to work, what they expect of you, durable facts about their projects and "
    "tools. Save what stands out with the memory tool (short, factual entries; fix entries that turned "
    "out wrong). If nothing is worth keeping, reply 'Nothing to save.' and stop."
)
SKILL_REVIEW = (
    "Look back over the conversation above for a way of doing a task that took trial and error, a "
    "change of course, or the user's correction, and that would help next time. If a skill for it "
    "exists (check with skills_list), patch it with what was learned; otherwise create one when the "
    "procedure is reusable. If nothing is worth keeping, reply 'Nothing to save.' and stop."
)
HELD = ("Held for the user's approval: it will be shown to them with its diff at the start of their next "
        "prompt. Do not retry it.")
HELD_SHOWN = "Held for your approval: you will see it with its diff at the start of your next prompt."


@dataclass
class Nudges:
    """When a review is due; the counters live as long as the session object."""

    memory_interval: int  # user turns between memory reviews (0: never)
    skill_interval: int  # tool-using model calls between skill reviews (0: never)
    turns_since_memory: int = 0
    calls_since_skill: int = 0

    def after_turn(self, tools_used: set[str], tool_calls: int) -> tuple[bool, bool]:
        """Count a finished turn; (review memory?, review skills?) — a review that fires resets."""
        from acp_hermes_tools import declared

        saved = {tool.saves for name in tools_used if (tool := declared(name)) is not None}
        self.turns_since_memory = 0 if "notes" in saved else self.turns_since_memory + 1
        self.calls_since_skill = 0 if "skills" in saved else self.calls_since_skill + tool_calls
        memory = 0 < self.memory_interval <= self.turns_since_memory
        skills = 0 < self.skill_interval <= self.calls_since_skill
        if memory:
            self.turns_since_memory = 0
        if skills:
            self.calls_since_skill = 0
        return memory, skills


@value
class Proposal:
    """A review's write held in ``default`` mode: the call to run again, this time asking the user."""

    name: str
    arguments: dict[str, Any]
    title: str


@dataclass
class ReviewTarget:
    """What a review needs of its session (handed over by the session: no cycle)."""

    messages: list[Message]  # a snapshot (messages are immutable)
    system_prompt: str
    settings: TurnSettings
    provider: Provider
    registry: ToolRegistry
    scope: ToolScope
    editor: Editor
    gate: PermissionGate
    sink: EventSink
    transcript: Transcript  # where its calls are stored for replay (the session's current segment)
    proposals: list[Proposal] = field(default_factory=list)  # filled in default mode


async def review(target: ReviewTarget, *, memory: bool, skills: bool) -> tuple[Usage, int]:
    """Run one background review to its end (at most ``MAX_REVIEW_CALLS`` model calls); its cost."""
    from acp_hermes.core.loop import AgentLoop
    from acp_hermes.core.turn_input import TurnInput, UserPrompt

    instruction = "\n\n".join(text for wanted, text in ((memory, MEMORY_REVIEW), (skills, SKILL_REVIEW)) if wanted)
    registry = target.registry.where(lambda tool: tool.reviewed)
    sink = _ReviewSink(target)
    gate = _ReviewGate(target)

    def make_context(call_id: str, title: str, call_sink: ToolEventSink) -> ToolContext:
        return ToolContext(call_id=call_id, scope=target.scope, editor=target.editor, gate=gate, sink=call_sink,
                           title=title)

    loop = AgentLoop(provider=target.provider, registry=registry, sink=sink,
                     transcript=_Scratch(target.messages), system_prompt=target.system_prompt,
                     make_context=make_context, scope=target.scope)
    settings = replace(target.settings, max_iterations=MAX_REVIEW_CALLS, thinking_budget=None)
    prompt = UserPrompt((Text(instruction),), instruction, (TextPart(instruction),))
    result = await loop.run_turn(TurnInput(prompt), settings)
    target.proposals.extend(gate.held_proposals(sink.started))
    log.info("background review ended (%s, %d model calls, %d held)", result.stop_reason, result.model_calls,
             len(gate.held))
    return result.usage, result.model_calls


class _Scratch(Transcript):
    """The review's own conversation: kept in memory only (the session's history is untouched)."""

    def __init__(self, messages: list[Message]) -> None:
        self.session_id = "review"
        self.messages = list(messages)
        self.client_message_id = None
        self.last_prompt_row = None

    async def _append_row(self, role: str, content: str, **fields: Any) -> int | None:
        return None


class _ReviewSink:
    """Shows the review's tool calls in the session (and stores them for replay); drops its text."""

    def __init__(self, target: ReviewTarget) -> None:
        self._target = target
        self.started: dict[str, ToolCallStarted] = {}

    async def emit(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            event = ToolCallStarted(event.call_id, event.name, f"Review: {event.title}", event.kind,
                                    event.raw_input, event.locations)
            self.started[event.call_id] = event
        elif isinstance(event, ToolCallFinished):
            started = self.started.get(event.call_id)
            if started is not None:
                await self._target.transcript.add_side_call(ToolOutcome(
                    call_id=event.call_id, name=started.name, title=started.title, kind=started.kind,
                    raw_input=started.raw_input, text="", ok=event.status == "completed", display=event.display,
                    locations=event.locations or (), raw_output=event.raw_output,
                ))
        else:
            return  # its reasoning and replies stay out of the session
        await self._target.sink.emit(event)


class _ReviewGate:
    """The review's gate: only its own stores, as the session's mode allows (see the module doc)."""

    def __init__(self, target: ReviewTarget) -> None:
        self._target = target
        self.held: list[str] = []  # call ids of writes held as proposals

    async def authorize_state(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        mode = self._target.gate.mode
        if mode is Mode.PLAN:
            raise PermissionDenied("Plan mode: a background review writes nothing.")
        if mode is Mode.DEFAULT:
            self.held.append(ctx.call_id)
            raise PermissionDenied(HELD, HELD_SHOWN)

    async def authorize_edits(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        raise PermissionDenied("A background review only updates memory and skills.")

    async def authorize_restore(self, ctx: ToolContext, changes: Sequence[FileChange], label: str,
                                display: Sequence[Display], *, requested: bool = False) -> None:
        raise PermissionDenied("A background review only updates memory and skills.")

    async def authorize_command(self, ctx: ToolContext, command: str, cwd: Path, *,
                                outside_sandbox: bool = False) -> CommandPermit:
        raise PermissionDenied("A background review only updates memory and skills.")

    async def authorize_read(self, ctx: ToolContext, paths: Sequence[Path], purpose: ReadPurpose = "file", *,
                             links: Mapping[Path, Path] | None = None) -> None:
        raise PermissionDenied("A background review only updates memory and skills.")

    async def authorize_external(self, ctx: ToolContext, server: str, tool: str, arguments: dict[str, Any], *,
                                 read_only: bool) -> None:
        raise PermissionDenied("A background review only updates memory and skills.")

    async def authorize_job_input(self, ctx: ToolContext, job: JobHandle, text: str, *, eof: bool = False) -> None:
        raise PermissionDenied("A background review only updates memory and skills.")

    def held_proposals(self, started: dict[str, ToolCallStarted]) -> list[Proposal]:
        return [Proposal(started[i].name, dict(started[i].raw_input or {}), started[i].title.removeprefix("Review: "))
                for i in self.held if i in started]


async def offer_proposals(proposals: list[Proposal], *, registry: ToolRegistry, sink: EventSink,
                          transcript: Transcript,
                          make_context: Callable[[str, str, ToolEventSink], ToolContext]) -> None:
    """Put each held proposal to the user (the real gate asks with the diff); apply what is allowed."""
    from acp_hermes.core.side_calls import run_beside_turn
    from acp_hermes_tools.registry import ToolCall

    while proposals:
        proposal = proposals.pop(0)
        call = ToolCall(f"proposal-{uuid.uuid4()}", proposal.name, proposal.arguments)
        await run_beside_turn(call, f"Proposed by a review: {proposal.title}", "edit", registry=registry,
                              sink=sink, make_context=make_context, transcript=transcript)
