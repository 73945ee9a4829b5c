"""One model turn of a session, from its input to what follows it.

``Session.prompt`` makes a ``Turn`` for each prompt it runs (under the session's lock, so turns never
overlap). The turn catches up with what another process stored, asks the budget, assembles the input
(the prompt and the notes for the model: ``core.turn_input``), compacts a full context, offers the
review's held proposals, runs the agent loop with its controls (steers, budget, web tools, the memory
provider's fence) inside a cancel scope, and then does what follows a turn: usage recorded and
reported, job notices, the memory provider told, the session named after its first exchange, the
learning loop nudged. It reads and changes the session's state (``core.state``) and reaches out only
through its services (``core.services``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core import turn_report
from acp_hermes.core.events import CompactionStarting, TurnEnded
from acp_hermes.core.transcript import final_answer
from acp_hermes.model.pricing import context_window
from acp_hermes.permissions.modes import Mode

if TYPE_CHECKING:
    from acp_hermes.core.attachments import ConvertedPrompt
    from acp_hermes.core.checkpoints import Checkpoint
    from acp_hermes.core.compactor import Compaction
    from acp_hermes.core.loop import AgentLoop, StopReason, TurnSettings
    from acp_hermes.core.memory_providers import MemoryProviders
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState
    from acp_hermes.core.steering import Steer, Steering
    from acp_hermes.core.transcript import Transcript
    from acp_hermes.core.turn_input import Note, TurnInput
    from acp_hermes.core.user_prompt import PromptPart
    from acp_hermes.model.rate_limits import RateLimit

log = logging.getLogger(__name__)

MCP_TURN_WAIT_SECONDS = 10.0  # how long a turn waits for MCP servers still connecting before it starts without them


class Turn:
    """One prompt's model turn: ``run`` it once; ``cancel`` stops its loop (the session's cancel)."""

    def __init__(self, state: SessionState, services: SessionServices, steering: Steering,
                 parts: Sequence[PromptPart], client_message_id: str | None = None, *,
                 cancelled: Callable[[], bool] = lambda: False, notes: Sequence[Note] = ()) -> None:
        self._state = state
        self._services = services
        self._steering = steering
        self._parts = parts
        self._client_message_id = client_message_id
        self._own = state.subagent is None  # a child's turn is part of its parent's (budget, checkpoint, replay)
        self._cancelled = cancelled  # the session was cancelled (or closed) since this prompt came
        self._scope: anyio.CancelScope | None = None
        self._given_notes = list(notes)  # what came with the prompt (a UserPromptSubmit hook's context)

    def cancel(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def run(self) -> StopReason:
        state, services = self._state, self._services
        if self._own:  # a child lives in this process only
            await catch_up(state, services)
        state.transcript.client_message_id = self._client_message_id
        if self._own:  # a child's turn is part of its parent's, whose budget it spends
            services.budget.start_turn(await anyio.to_thread.run_sync(services.recorded_spend))
            refusal = services.budget.refusal()
            if refusal is not None:
                await self._refuse(refusal)
                if (report := turn_report.current()) is not None:
                    report.exceeded = services.quotas.budget_stop(refusal)
                return "end_turn"
            self._steering.open()  # from now on a steer reaches this turn (its first request, at the latest)
        try:
            return await self._run()
        finally:  # the loop closes it as it ends; this is for a turn that broke before its loop ran
            carry_undelivered(state, services, self._steering.close())

    async def _refuse(self, reason: str) -> None:
        """Answer a prompt without running it (the budget is spent): shown, stored for replay, never
        part of the model's history."""
        import uuid

        from acp_hermes.core.events import AgentText
        from acp_hermes.core.user_prompt import command_text

        message_id = str(uuid.uuid4())
        transcript = self._state.transcript
        await transcript.add_local_prompt(command_text(self._parts) or "", self._parts)
        await transcript.add_local_reply(reason, message_id=message_id)
        await self._services.emit(AgentText(message_id, reason))

    async def _run(self) -> StopReason:
        # Only turns need these; the adapter warms them up right after session/new.
        from acp_hermes.core.attachments import convert_prompt
        from acp_hermes.core.loop import AgentLoop, TurnControls
        from acp_hermes.core.turn_input import TurnInput, UserPrompt

        state, services = self._state, self._services
        providers = await services.memory_providers() if self._own else None
        if services.mcp is not None and services.mcp.connecting:
            await services.mcp.wait_connecting(MCP_TURN_WAIT_SECONDS)
        hooks = services.hooks
        await hooks.hooks()  # loaded once per session, off the event loop
        registry = services.registry
        if state.stored_tool_results:
            registry.restore_state(services.tools, state.stored_tool_results)
            state.stored_tool_results = []
        converted = await anyio.to_thread.run_sync(convert_prompt, self._parts, state.cwd)
        prompt = UserPrompt(tuple(converted.content), converted.plain_text, tuple(self._parts))
        turn_input = TurnInput(prompt, await self._notes(converted, providers), hints=services.hints,
                               jobs=services.job_notices.ended)
        if compaction_due(state, services, state.context_tokens()):
            await compact(state, services)
        if services.proposals:
            from acp_hermes.core.review import offer_proposals

            await offer_proposals(services.proposals, registry=registry, sink=services.sink,
                                  transcript=state.transcript, make_context=services.tool_context)
        own = self._own
        loop = AgentLoop(
            provider=services.runtime.provider,
            registry=registry,
            sink=services.sink,
            transcript=state.transcript,
            system_prompt=state.system_prompt,
            make_context=services.tool_context,
            scope=services.tools,
            compact_if_due=self._compact_between_calls,
            controls=TurnControls(steering=self._steering if own else None,
                                  stop_before_request=services.budget.exceeded,
                                  spent=lambda usage: services.spent(state.choices.model, usage),
                                  passed_at_end=services.budget.passed if own else None,
                                  web=services.web if own else None, scrub_fences=providers is not None,
                                  tool_finished=services.tool_finished if providers is not None else None,
                                  hooks=hooks if hooks.uses_tools() else None,
                                  stop_check=hooks.stopping if hooks.has("Stop", "SubagentStop") else None,
                                  limits_seen=self._limits_seen if own else None),
        )
        stop: StopReason = "cancelled"
        if own:
            services.checkpoints.begin(converted.plain_text, lambda: state.transcript.last_prompt_row)
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._cancelled():  # cancelled (or closed) while the turn was prepared: its loop never starts
                scope.cancel()
            try:
                stop = (await loop.run_turn(turn_input, turn_settings(state, services))).stop_reason
            finally:
                self._scope = None
                carry_undelivered(state, services, self._steering.close())  # a steer from now on starts a new turn
                if own:
                    with anyio.CancelScope(shield=True):  # a cancelled turn's changes are the agent's all the same
                        ended = await services.checkpoints.end()
                        await self._report(loop, ended)
        await self._after(loop, turn_input, stop, providers)
        return stop

    async def _limits_seen(self, limits: tuple[RateLimit, ...]) -> None:
        """After each model call (or its final failure): the API's limits and the budget, as meters."""
        self._services.quotas.saw(limits)
        await self._services.quotas.publish()

    async def _report(self, loop: AgentLoop, ended: Checkpoint | None) -> None:
        """Fill in the prompt's report, if its sender asked for one: the limit that ended the turn, and
        (when wanted) the files it changed, from its checkpoint (none taken: it changed nothing)."""
        report = turn_report.current()
        if report is None:
            return
        services, result = self._services, loop.result
        report.ran = True
        if result.rate_limited and result.failure:
            report.exceeded = services.quotas.rate_limited(result.failure)
        elif result.failure is not None and result.failure == services.budget.exceeded():
            report.exceeded = services.quotas.budget_stop(result.failure)
        if report.wants_files:
            report.changed = await services.checkpoints.changed_paths(ended)

    async def _notes(self, converted: ConvertedPrompt, providers: MemoryProviders | None) -> list[Note]:
        """What the model reads with the prompt: hints of the files it attaches, plan mode, jobs that
        ended, what changed since the last turn, the memory provider's recall."""
        from acp_hermes.core.attachments import attached_paths
        from acp_hermes.core.turn_input import Hint, HookContext, PlanMode, Recall

        state, services = self._state, self._services
        notes: list[Note] = []
        attached = attached_paths(self._parts, state.cwd)
        hint = await anyio.to_thread.run_sync(services.hints.check_paths, attached) if attached else ""
        if hint.strip():  # attached files count as touched, like the paths of tool calls
            notes.append(Hint(hint.strip()))
        if state.choices.mode is Mode.PLAN:
            notes.append(PlanMode())
        notes.extend(services.job_notices.turn_started())  # jobs that ended since the last turn
        notes.extend(state.notes)  # e.g. files rolled back
        state.notes.clear()
        if providers is not None:  # recall for this message: in it, fenced; never in the system prompt
            services.provider_turns += 1
            recall = await providers.recall(state.id, state.cwd, services.provider_turns, converted.plain_text,
                                            services.notify)
            if recall:
                notes.append(Recall(recall))
        notes.extend(HookContext(text) for text in await services.hooks.start_context())  # SessionStart's
        notes.extend(self._given_notes)
        return notes

    async def _compact_between_calls(self, context_tokens: int) -> tuple[Transcript, str] | None:
        """The loop's hook after a round of tool results: the new history and prompt, if compacted."""
        state, services = self._state, self._services
        if not compaction_due(state, services, context_tokens):
            return None
        return (state.transcript, state.system_prompt) if (await compact(state, services)).done else None

    async def _after(self, loop: AgentLoop, turn_input: TurnInput, stop: StopReason,
                     providers: MemoryProviders | None) -> None:
        """What follows a turn, cancelled or not: its usage counted and shown, notices, and for one that
        ended by itself the memory provider told, a first exchange named, the learning loop nudged."""
        state, services = self._state, self._services
        result = loop.result  # also what a cancelled turn used before it stopped
        state.last_turn = result
        state.notes.extend(turn_input.left_over())  # a flagged web result's warning: with the next prompt
        if result.model_calls:
            await services.account(state.choices.model, result.usage, result.model_calls)
        if result.context_tokens:  # measured after any compaction of this turn; a cancelled call measured nothing
            state.last_context_tokens, state.measured_messages = result.context_tokens, result.measured_messages
        await services.report_usage(state)
        await services.job_notices.turn_ended()
        if stop != "cancelled":
            if providers is not None:
                services.publish(TurnEnded(turn_input.prompt.text, final_answer(state.transcript.messages)))
            if not state.title and not services.naming_started:
                services.naming_started = True
                services.on_first_exchange()
            nudge(state, services, result.tools_used, max(0, result.model_calls - 1))
        log.info("session %s: turn ended (%s)", state.id, stop)


def turn_settings(state: SessionState, services: SessionServices) -> TurnSettings:
    from acp_hermes.core.loop import TurnSettings

    settings = services.settings
    level = state.choices.thought_level
    return TurnSettings(
        model=state.choices.model,
        max_tokens=settings.max_output_tokens,
        thinking_budget=None if level == "off" else settings.thinking_budgets.get(level),
        max_iterations=max_iterations(state, services),
        cache_ttl=settings.cache_ttl,
    )


def max_iterations(state: SessionState, services: SessionServices) -> int:
    """Model calls a turn may make."""
    return state.subagent.max_iterations if state.subagent is not None else services.settings.max_iterations


def carry_undelivered(state: SessionState, services: SessionServices, steers: Sequence[Steer]) -> None:
    """Steers a turn that stopped early never read go to the model with the next prompt."""
    from acp_hermes.core.turn_input import UndeliveredSteer
    from acp_hermes_memory.text import one_line

    for steer in steers:
        state.notes.append(UndeliveredSteer(steer.plain_text))
        services.notify(f"Your message “{one_line(steer.plain_text, 80)}” arrived as the turn stopped; it goes "
                        "to the model with your next prompt.")


async def catch_up(state: SessionState, services: SessionServices) -> None:
    """Go on from the conversation as stored when another process changed it since this one read it
    (an editor window of its own on this session compacted it or added to it), so the model's next
    request loses nothing either stored. One small read when nothing changed."""
    from acp_hermes.core.transcript import stored_conversation

    transcript, db = state.transcript, services.db
    news = await anyio.to_thread.run_sync(db.segment_news, transcript.session_id, transcript.synced_to)
    if transcript.in_step(news):
        return
    stored = await anyio.to_thread.run_sync(stored_conversation, db, state.id)
    if stored is None:
        return
    state.go_on_from(stored.transcript, stored.system_prompt, stored.context)
    log.info("session %s: changed in another process; going on from what is stored (segment %s, %d messages)",
             state.id, state.transcript.session_id, len(state.transcript.messages))


def compaction_due(state: SessionState, services: SessionServices, context_tokens: int) -> bool:
    from acp_hermes.core.compression import should_compress

    settings = services.settings
    window = context_window(state.choices.model, settings)
    return settings.compression and should_compress(context_tokens, window, settings.compression_threshold)


async def compact(state: SessionState, services: SessionServices, focus: str | None = None, *,
                  manual: bool = False) -> Compaction:
    """Compact the conversation now (``core.compactor``); the state goes on from the new segment."""
    from acp_hermes.core.compactor import CompactionTarget
    from acp_hermes.core.compactor import compact as compact_target

    settings, runtime = services.settings, services.runtime
    target = CompactionTarget(
        root_id=state.id, transcript=state.transcript, system_prompt=state.system_prompt,
        model=state.choices.model, window=context_window(state.choices.model, settings),
        threshold=settings.compression_threshold, sink=services.sink, provider=runtime.provider,
        registry=runtime.registry, scope=services.tools, auxiliary=services.auxiliary, db=runtime.db,
        make_context=services.tool_context, rebuild_prompt=services.rebuild_prompt, flush=settings.memory_flush,
    )
    await services.hooks.compacting(manual, focus)
    services.publish(CompactionStarting(list(state.transcript.messages)))
    compaction = await compact_target(target, focus=focus, manual=manual)
    if compaction.done:
        state.go_on_from(target.transcript, target.system_prompt,
                         (compaction.after_tokens, len(target.transcript.messages)))
    return compaction


def nudge(state: SessionState, services: SessionServices, tools_used: set[str], tool_calls: int) -> None:
    """Count a finished turn for the learning loop; start the background review it calls for."""
    memory, skills = services.nudges.after_turn(tools_used, tool_calls)
    if memory or skills:
        services.spawn(_review(state, services, memory=memory, skills=skills))


def start_curation(state: SessionState, services: SessionServices) -> None:
    """The skills' curation pass (``skills.curator``), beside the session like a review, on the
    auxiliary model and charged to this session (not begun when its budget is spent)."""
    if state.subagent is None and not services.closed and services.budget.refusal() is None:
        services.spawn(_review(state, services, memory=False, skills=False, curate=True))


async def _review(state: SessionState, services: SessionServices, *, memory: bool, skills: bool,
                  curate: bool = False) -> None:
    """A background review of the conversation as it is now, or the curation pass (see ``core.review``)."""
    from dataclasses import replace

    from acp_hermes.core.review import ReviewTarget
    from acp_hermes.core.review import review as run_review

    runtime = services.runtime
    settings = turn_settings(state, services)
    if curate:
        settings = replace(settings, model=services.settings.auxiliary_model)
    target = ReviewTarget(
        messages=[] if curate else list(state.transcript.messages), system_prompt=state.system_prompt,
        settings=settings, provider=runtime.provider, registry=runtime.registry,
        scope=services.tools, editor=services.editor, gate=services.gate, sink=services.sink,
        transcript=state.transcript, proposals=services.proposals,
    )
    scope = anyio.CancelScope()
    services.reviews.add(scope)
    try:
        with scope:
            usage, calls = await run_review(target, memory=memory, skills=skills, curate=curate)
    except Exception:  # a review must never take the session down
        log.exception("session %s: background review failed", state.id)
        return
    finally:
        services.reviews.discard(scope)
    if scope.cancelled_caught:
        return
    if calls:
        await anyio.to_thread.run_sync(runtime.record_usage, state.id, settings.model, usage, calls)
