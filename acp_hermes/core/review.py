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

The curation pass (``skills.curator``) is a review of its own: once a day, on the auxiliary
model, with the list of skills the agent created and their use instead of the conversation, it
proposes merging overlapping skills and fixing outdated ones, through the same gate. Skill writes
of a review are recorded in the skills history as the ``review``'s or the ``curator``'s (a held
proposal keeps its author when it is applied later), and the curator's store refuses to change a
skill the agent did not create.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from acp_hermes.core.events import Event, EventSink, ToolCallFinished, ToolCallStarted
from acp_hermes.core.transcript import ToolOutcome, Transcript
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.messages import Message, Text
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value
from acp_hermes_tools.context import Permit, ToolContext
from acp_hermes_tools.contracts import PermissionDenied, Request, State

if TYPE_CHECKING:
    from acp_hermes.core.loop import TurnSettings
    from acp_hermes.model.types import Provider, Usage
    from acp_hermes.permissions.gate import PermissionGate
    from acp_hermes_memory.skills import SkillStore
    from acp_hermes_tools.context import ToolScope
    from acp_hermes_tools.contracts import Editor, ToolEventSink
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
CURATOR_REVIEW = (
    "Curate the skills you created (listed below with how much they are used). Merge skills that "
    "overlap: patch the one to keep with what the others add, then delete the others. Fix a skill whose "
    "steps are out of date or wrong. Change only the skills listed; keep every change small and say why "
    "in the skill. If nothing needs doing, reply 'Nothing to change.' and stop."
)
CURATED_SKILLS_SHOWN = 60  # skills listed in the curator's instruction (the least used first)
HELD = ("Held for the user's approval: it will be shown to them with its diff at the start of their next "
        "prompt. Do not retry it.")
HELD_SHOWN = "Held for your approval: you will see it with its diff at the start of your next prompt."


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class Nudges:
    """When a review is due; the counters live as long as the session object."""

    __slots__ = ("calls_since_skill", "memory_interval", "skill_interval", "turns_since_memory")

    def __init__(self, memory_interval: int, skill_interval: int, turns_since_memory: int = 0,
                 calls_since_skill: int = 0) -> None:
        self.memory_interval = memory_interval  # user turns between memory reviews (0: never)
        self.skill_interval = skill_interval  # tool-using model calls between skill reviews (0: never)
        self.turns_since_memory = turns_since_memory
        self.calls_since_skill = calls_since_skill

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
    author: str = "review"  # whose change it is, for the skills history (review or curator)


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class ReviewTarget:
    """What a review needs of its session (handed over by the session: no cycle)."""

    __slots__ = ("editor", "gate", "messages", "proposals", "provider", "registry", "scope", "settings", "sink",
                 "system_prompt", "transcript")

    def __init__(self, messages: list[Message], system_prompt: str, settings: TurnSettings, provider: Provider,
                 registry: ToolRegistry, scope: ToolScope, editor: Editor, gate: PermissionGate, sink: EventSink,
                 transcript: Transcript, proposals: list[Proposal] | None = None) -> None:
        self.messages = messages  # a snapshot (messages are immutable)
        self.system_prompt = system_prompt
        self.settings = settings
        self.provider = provider
        self.registry = registry
        self.scope = scope
        self.editor = editor
        self.gate = gate
        self.sink = sink
        self.transcript = transcript  # where its calls are stored for replay (the session's current segment)
        self.proposals: list[Proposal] = [] if proposals is None else proposals  # filled in default mode


async def review(target: ReviewTarget, *, memory: bool, skills: bool, curate: bool = False) -> tuple[Usage, int]:
    """Run one background review to its end (at most ``MAX_REVIEW_CALLS`` model calls); its cost.
    ``curate``: the curation pass instead (nothing runs when the agent created no skill)."""
    import anyio

    from acp_hermes.core.loop import AgentLoop
    from acp_hermes.core.turn_input import TurnInput, UserPrompt
    from acp_hermes.model.types import Usage

    author = "curator" if curate else "review"
    scope = attributed(target.scope, author)
    if curate:
        store = scope.services.skills
        listed = None if store is None else await anyio.to_thread.run_sync(curation_list, store)
        if not listed:
            return Usage(), 0
        instruction = f"{CURATOR_REVIEW}\n\n{listed}"
    else:
        instruction = "\n\n".join(text for wanted, text in ((memory, MEMORY_REVIEW), (skills, SKILL_REVIEW))
                                   if wanted)
    # The curation pass tends skills alone: the review's tools but those that keep notes (memory).
    registry = target.registry.where(lambda tool: tool.reviewed and not (curate and tool.saves == "notes"))
    sink = _ReviewSink(target, "Curation" if curate else "Review")
    gate = _ReviewGate(target, sink, author)

    def make_context(call_id: str, title: str, call_sink: ToolEventSink) -> ToolContext:
        return ToolContext(call_id=call_id, scope=scope, editor=target.editor, gate=gate, sink=call_sink,
                           title=title)

    loop = AgentLoop(provider=target.provider, registry=registry, sink=sink,
                     transcript=_Scratch(target.messages), system_prompt=target.system_prompt,
                     make_context=make_context, scope=scope)
    settings = replace(target.settings, max_iterations=MAX_REVIEW_CALLS, thinking_budget=None)
    prompt = UserPrompt((Text(instruction),), instruction, (TextPart(instruction),))
    result = await loop.run_turn(TurnInput(prompt), settings)
    log.info("background %s ended (%s, %d model calls, %d held)", author, result.stop_reason, result.model_calls,
             gate.held)
    return result.usage, result.model_calls


def attributed(scope: ToolScope, author: str) -> ToolScope:
    """``scope`` with its skills store recording changes as ``author``'s."""
    store = scope.services.skills
    if store is None:
        return scope
    return dataclasses.replace(scope, services=dataclasses.replace(scope.services, skills=store.with_author(author)))


def curation_list(store: SkillStore) -> str:
    """The skills the agent created, least used first, as the curator's instruction lists them ("" for none).
    Blocking: reads the index and the usage sidecar."""
    from datetime import datetime, timezone

    store.usage.flush()
    mine = [s for s in store.statuses() if s.created_by == "agent" and s.info.origin == "home"]
    mine.sort(key=lambda s: (s.usage.use_count + s.usage.view_count, s.usage.last_activity or 0.0))
    lines = []
    for status in mine[:CURATED_SKILLS_SHOWN]:
        used = status.usage.use_count + status.usage.view_count
        last = status.usage.last_use
        when = datetime.fromtimestamp(last, timezone.utc).strftime("%Y-%m-%d") if last else "never"
        notes = ", ".join(word for word, shown in (("stale", status.state == "stale"), ("pinned", status.pinned))
                          if shown)
        lines.append(f"- {status.info.qualified_name}: {one_line(status.info.description, 160)} "
                     f"[{used} uses, last {when}{', ' + notes if notes else ''}]")
    return "Skills you created:\n" + "\n".join(lines) if lines else ""


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

    def __init__(self, target: ReviewTarget, label: str) -> None:
        self._target = target
        self.prefix = f"{label}: "  # what each call's title starts with
        self.started: dict[str, ToolCallStarted] = {}

    async def emit(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            event = ToolCallStarted(event.call_id, event.name, f"{self.prefix}{event.title}", event.kind,
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

    def __init__(self, target: ReviewTarget, sink: _ReviewSink, author: str) -> None:
        self._target = target
        self._sink = sink
        self._author = author
        self.held = 0  # writes held as proposals

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        if not isinstance(request, State):
            raise PermissionDenied("A background review only updates memory and skills.")
        mode = self._target.gate.mode
        if mode is Mode.PLAN:
            raise PermissionDenied("Plan mode: a background review writes nothing.")
        if mode is Mode.DEFAULT:
            started = self._sink.started.get(ctx.call_id)
            if started is not None:  # offered at the user's next prompt, even one sent while the review goes on
                self.held += 1
                self._target.proposals.append(Proposal(started.name, dict(started.raw_input or {}),
                                                       started.title.removeprefix(self._sink.prefix), self._author))
            raise PermissionDenied(HELD, HELD_SHOWN)
        return Permit()


async def offer_proposals(proposals: list[Proposal], *, registry: ToolRegistry, sink: EventSink,
                          transcript: Transcript,
                          make_context: Callable[[str, str, ToolEventSink], ToolContext]) -> None:
    """Put each held proposal to the user (the real gate asks with the diff); apply what is allowed."""
    from acp_hermes.core.side_calls import run_beside_turn
    from acp_hermes_tools.registry import ToolCall

    while proposals:
        proposal = proposals.pop(0)
        call = ToolCall(f"proposal-{uuid.uuid4()}", proposal.name, proposal.arguments)

        def as_author(call_id: str, title: str, call_sink: ToolEventSink, author: str = proposal.author) -> ToolContext:
            ctx = make_context(call_id, title, call_sink)  # a new context: this call's alone
            ctx.scope = attributed(ctx.scope, author)
            return ctx

        source = "the curation pass" if proposal.author == "curator" else "a review"
        await run_beside_turn(call, f"Proposed by {source}: {proposal.title}", "edit", registry=registry,
                              sink=sink, make_context=as_author, transcript=transcript)
