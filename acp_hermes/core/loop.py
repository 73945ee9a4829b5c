"""The agent loop: model → tool calls → results → model, until the model stops.

The loop is protocol-agnostic: it reports through an ``EventSink`` and reaches files and
commands through the tool context's editor. It enforces the iteration budget, runs read-only
parallel-safe calls concurrently, and on cancellation closes every open tool call and keeps
the stored history valid (every tool_use gets a result) before letting the cancel through. A
tool may hand the turn to the user (a question asked in the chat): the turn then ends there.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio

from acp_hermes.core.events import AgentText, AgentThought, EventSink, ToolCallFinished, ToolCallStarted, UserText
from acp_hermes.core.history import repaired
from acp_hermes.core.memory_fence import FenceScrubber
from acp_hermes.core.steering import Steering
from acp_hermes.core.transcript import AnnouncedCall, ToolOutcome, Transcript
from acp_hermes.core.turn_input import BudgetPressure, TurnInput, WebWarning, budget_share, steer_blocks
from acp_hermes.core.web import REFUSED_NOTICE, WebTools, outcome, presented
from acp_hermes.model.messages import ServerToolResult, ServerToolUse, Text, ToolUse
from acp_hermes.model.rate_limits import RateLimit
from acp_hermes.model.types import (
    Completed,
    ModelError,
    ModelRequest,
    Provider,
    ServerToolsRejected,
    TextDelta,
    ThinkingDelta,
    ToolUseReady,
    Usage,
)
from acp_hermes_memory.values import value
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import (
    Location,
    PlanEntry,
    PlanUpdated,
    TextDisplay,
    ToolEvent,
    ToolEventSink,
)
from acp_hermes_tools.registry import ToolCall, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
CANCELLED_RESULT = "Cancelled by the user before it finished."
NOT_RUN_AFTER_QUESTION = ("Not run: the turn ended to wait for the user's answer to a question; call it again "
                          "if it is still needed.")


class CallHooks(Protocol):
    """What runs around each tool call (``core.hooks.SessionHooks``: the user's PreToolUse and PostToolUse)."""

    async def around(self, call: ToolCall, ctx: ToolContext,
                     run: Callable[[], Awaitable[ToolResult]]) -> ToolResult: ...


# Asked as the turn would end by itself: why it should go on (a Stop hook's reason), or None. Its argument:
# whether the turn already went on once for it.
StopCheck = Callable[[bool], Awaitable["str | None"]]
STOP_HOOK_NOTE = ("[A hook the user set up asks you not to stop yet: {reason}. Continue the task with this in mind; "
                  "end the turn when it is done.]")

# Given the context's size, the session's new (transcript, system prompt) if it compacted, else None.
CompactionHook = Callable[[int], Awaitable["tuple[Transcript, str] | None"]]


@value
class TurnControls:
    """What the user holds over a running turn besides cancelling it: steers for its next request,
    a budget asked before each request (why it must not start, or None) and once more when the turn
    ends by itself (a limit its last request went past, said though no request is stopped), and the
    meter each completed call's usage is added to."""

    steering: Steering | None = None
    stop_before_request: Callable[[], str | None] | None = None
    passed_at_end: Callable[[], str | None] | None = None
    spent: Callable[[Usage], None] | None = None
    web: WebTools | None = None  # the API's own web tools, offered with every request while the endpoint takes them
    scrub_fences: bool = False  # a memory provider's fence the model echoes is kept from the editor
    tool_finished: Callable[[ToolCall, ToolResult], None] | None = None  # each call's result, as it finishes
    hooks: CallHooks | None = None  # the user's hooks around each tool call
    stop_check: StopCheck | None = None  # the user's Stop hooks, asked once the model would end the turn
    limits_seen: Callable[[tuple[RateLimit, ...]], Awaitable[None]] | None = None  # after each call, or its 429


@dataclass(frozen=True, slots=True)
class TurnSettings:
    model: str
    max_tokens: int
    thinking_budget: int | None
    max_iterations: int
    cache_ttl: str


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class TurnResult:
    __slots__ = ("context_tokens", "failure", "measured_messages", "model_calls", "rate_limited", "stop_reason",
                 "tools_used", "usage")

    def __init__(self, stop_reason: StopReason, usage: Usage | None = None, model_calls: int = 0,
                 context_tokens: int = 0, measured_messages: int = 0, tools_used: set[str] | None = None,
                 failure: str | None = None, rate_limited: bool = False) -> None:
        self.stop_reason = stop_reason
        self.usage = Usage() if usage is None else usage
        self.model_calls = model_calls
        self.context_tokens = context_tokens  # what the last model call measured (0: none, or a compaction followed)
        self.measured_messages = measured_messages  # how many messages of the transcript that measure covers
        self.tools_used: set[str] = set() if tools_used is None else tools_used  # names of the tools the model called
        self.failure = failure  # why the turn broke off (the model failed), told to the user
        self.rate_limited = rate_limited  # it broke off on the API's 429 with no retry left


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class _Call:
    """A tool call the editor has been told about and that has not finished yet."""

    __slots__ = ("call", "kind", "locations", "plan", "title")

    def __init__(self, call: ToolCall, title: str, kind: str, locations: tuple[Location, ...] = (),
                 plan: tuple[PlanEntry, ...] | None = None) -> None:
        self.call = call
        self.title = title
        self.kind = kind
        self.locations = locations  # as announced
        self.plan = plan


class _CallSink:
    """Forwards a call's events and remembers what they changed of it: the plan it published, its
    title and locations as last shown (stored for replay)."""

    def __init__(self, sink: EventSink, record: _Call) -> None:
        self._sink = sink
        self._record = record

    async def emit(self, event: ToolEvent) -> None:
        if isinstance(event, PlanUpdated):
            self._record.plan = event.entries
        elif event.call_id == self._record.call.id:
            if event.title is not None:
                self._record.title = event.title
            if event.locations is not None:
                self._record.locations = event.locations
        await self._sink.emit(event)


ContextFactory = Callable[[str, str, ToolEventSink], ToolContext]  # (call id, title, sink)


class AgentLoop:
    """Runs turns for one session."""

    def __init__(
        self,
        *,
        provider: Provider,
        registry: ToolRegistry,
        sink: EventSink,
        transcript: Transcript,
        system_prompt: str,
        make_context: ContextFactory,
        scope: ToolScope,
        compact_if_due: CompactionHook | None = None,
        controls: TurnControls | None = None,
    ) -> None:
        self._provider = provider
        self._registry = registry
        self._sink = sink
        self._transcript = transcript
        self._system_prompt = system_prompt
        self._make_context = make_context
        self._scope = scope
        self._compact_if_due = compact_if_due
        self._controls = controls or TurnControls()
        self._open: dict[str, _Call] = {}
        self._server_open: dict[str, _Call] = {}  # the API's web calls shown and not finished yet
        self._server_done: list[ToolOutcome] = []  # those of the current message that finished, kept with it
        self._handover: str | None = None  # what a call asked the user, who answers in the next prompt
        self.result = TurnResult("end_turn")  # the turn so far; read after a cancel too
        self._input: TurnInput | None = None  # the running turn's: its notes ride with the tool results

    async def run_turn(self, turn_input: TurnInput, settings: TurnSettings) -> TurnResult:
        """Run one user turn to its end. Cancellation propagates after cleanup."""
        ended = False
        try:
            turn = await self._turn(turn_input, settings)
            if turn.failure is None and self._controls.passed_at_end is not None:
                passed = self._controls.passed_at_end()
                if passed is not None:  # one request went past a limit and the turn ended: nothing stopped, so say it
                    await self._say_locally(passed)
            ended = True
            return turn
        finally:
            result, usage = self.result, self.result.usage
            log.debug("turn end: %s after %d model calls, %d tools used; tokens in %d, out %d, cache read %d, "
                      "cache write %d", result.stop_reason if ended else "cancelled or failed", result.model_calls,
                      len(result.tools_used), usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
                      usage.cache_write_tokens)

    async def _turn(self, turn_input: TurnInput, settings: TurnSettings) -> TurnResult:
        result = self.result = TurnResult("end_turn")
        self._input = turn_input
        prompt = turn_input.prompt
        await self._transcript.add_user(turn_input.opening(), prompt.text, prompt.parts)
        pressure = 0.0  # the highest budget share already noted this turn
        went_on = False  # a Stop hook already had the turn go on once (bounded: once)
        paused = False  # the last message paused (pause_turn): the next request continues it, with nothing added
        while True:
            if result.model_calls >= settings.max_iterations:
                log.info("iteration budget of %d model calls exhausted", settings.max_iterations)
                result.stop_reason = "max_turn_requests"
                return result
            if (over_budget := self._over_budget()) is not None:
                await self._stop_for_budget(over_budget)
                return result
            if not paused:
                await self._deliver_steers()
            paused = False
            result.model_calls += 1
            completed = await self._model_call(settings, result)
            if completed is None:
                return result
            calls = [self._open[b.id].call for b in completed.content if isinstance(b, ToolUse)]
            if completed.stop_reason == "tool_use" and calls:
                share = budget_share(result.model_calls, settings.max_iterations)
                if share > pressure:  # a nudge inside the conversation (the next tool result), not a new message
                    pressure = share
                    turn_input.add(BudgetPressure(result.model_calls, settings.max_iterations, share))
                await self._run_tools(calls)
                if self._handover is not None:
                    await self._hand_over()
                    return result
                await self._compact_when_full(result)
                continue
            paused = completed.stop_reason == "pause_turn"
            if paused:
                continue
            await self._fail_open_calls("The model stopped before this call could run.")
            result.stop_reason = _STOP_REASONS.get(completed.stop_reason, "end_turn")
            steering = self._controls.steering
            if result.stop_reason == "end_turn" and steering is not None and steering.waiting:
                continue  # the user said more while it answered: the model reads it before the turn ends
            if result.stop_reason == "end_turn" and self._controls.stop_check is not None:
                reason = await self._controls.stop_check(went_on)
                if reason is not None and not went_on:
                    went_on = True
                    await self._go_on(reason)
                    continue
            return result

    async def _go_on(self, reason: str) -> None:
        """A Stop hook's reason to go on: the model reads it as the next user message; the user sees it said."""
        from acp_hermes.core.steering import Steer
        from acp_hermes.core.turn_input import render_hook_context

        text = render_hook_context("Stop", STOP_HOOK_NOTE.format(reason=reason))
        await self._transcript.add_steer(Steer((Text(text),), text, ()), (Text(text),))
        await self._say_locally(f"A Stop hook asks to go on: {reason}")

    def _over_budget(self) -> str | None:
        check = self._controls.stop_before_request
        return check() if check is not None else None

    async def _stop_for_budget(self, message: str) -> None:
        """End the turn before a request the budget does not allow: the history stays as it is (valid),
        and the user is told why, in the chat and in the stored conversation."""
        log.info("turn stopped by its budget")
        self.result.failure = message
        await self._say_locally(message)

    async def _say_locally(self, message: str) -> None:
        """Tell the user ``message`` in the chat and the stored conversation, never the model."""
        message_id = str(uuid.uuid4())
        text = f"\n\n{message}\n"
        await self._sink.emit(AgentText(message_id, text))
        await self._transcript.add_local_reply(text, message_id=message_id)

    async def _deliver_steers(self) -> None:
        """What the user sent into the turn joins the history now, after the last results, and shows
        in the chat where the model reads it."""
        steering = self._controls.steering
        if steering is None or not steering.waiting:
            return
        for steer in steering.take():
            message_id = await self._transcript.add_steer(steer, steer_blocks(steer))
            await self._sink.emit(UserText(message_id, steer.plain_text))

    async def _compact_when_full(self, result: TurnResult) -> None:
        """Between model calls (every result stored), let the session compact a full context."""
        if self._compact_if_due is None:
            return
        compacted = await self._compact_if_due(result.context_tokens)
        if compacted is not None:
            self._transcript, self._system_prompt = compacted
            result.context_tokens = result.measured_messages = 0  # measured again by the next call

    async def _model_call(self, settings: TurnSettings, result: TurnResult) -> Completed | None:
        """Stream one model message into events; None when the turn must end (model failure)."""
        message_id = str(uuid.uuid4())
        web = self._controls.web
        request = ModelRequest(
            model=settings.model,
            system=self._system_prompt,
            messages=repaired(self._transcript.messages),
            tools=[*self._registry.definitions(), *(web.definitions() if web is not None else ())],
            max_tokens=settings.max_tokens,
            thinking_budget=settings.thinking_budget,
            cache_ttl=settings.cache_ttl,
        )
        text: list[str] = []
        thinking: list[str] = []
        completed: Completed | None = None
        scrubber = FenceScrubber() if self._controls.scrub_fences else None
        try:
            async for event in self._provider.stream(request):
                if isinstance(event, TextDelta):
                    shown = scrubber.feed(event.text) if scrubber is not None else event.text
                    if shown:
                        text.append(shown)
                        await self._sink.emit(AgentText(message_id, shown))
                elif isinstance(event, ThinkingDelta):
                    thinking.append(event.text)
                    await self._sink.emit(AgentThought(message_id, event.text))
                elif isinstance(event, ToolUseReady):
                    await self._announce(ToolCall(event.id, event.name, event.arguments, event.raw_arguments))
                elif isinstance(event, ServerToolUse):
                    await self._announce_server(event)
                elif isinstance(event, ServerToolResult):
                    await self._finish_server(event)
                elif isinstance(event, Completed):
                    completed = event
                    if scrubber is not None and (rest := scrubber.flush()):
                        text.append(rest)
                        await self._sink.emit(AgentText(message_id, rest))
        except ServerToolsRejected as error:
            if web is None or text or thinking or not web.refuse():
                await self._end_early(message_id, text, thinking, str(error))
                return None
            log.warning("the endpoint refused the web tools (%s): off for this session", error)
            await self._sink.emit(AgentText(str(uuid.uuid4()), f"{REFUSED_NOTICE}\n\n"))
            return await self._model_call(settings, result)
        except ModelError as error:
            await self._end_early(message_id, text, thinking, str(error))
            result.rate_limited = error.status == 429
            if self._controls.limits_seen is not None:
                await self._controls.limits_seen(error.rate_limits)
            return None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._save_partial(message_id, text, thinking, "cancelled")
                await self._fail_open_calls(CANCELLED_RESULT)
                await self._close_server_calls(CANCELLED_RESULT)
            raise
        if completed is None or not self._announced_every_call(completed):  # a provider broke its contract
            await self._end_early(message_id, text, thinking, "The model stream ended unexpectedly.")
            return None
        result.usage = result.usage + completed.usage
        if self._controls.spent is not None:
            self._controls.spent(completed.usage)
        if self._controls.limits_seen is not None:
            await self._controls.limits_seen(completed.rate_limits)
        result.context_tokens = completed.usage.prompt_tokens + completed.usage.output_tokens
        announced = {
            b.id: AnnouncedCall(self._open[b.id].title, self._open[b.id].kind, self._open[b.id].locations)
            for b in completed.content if isinstance(b, ToolUse)
        }
        if completed.stop_reason != "pause_turn":  # a paused message's web call goes on in the next one
            await self._close_server_calls("The model API did not finish this call.")
        server_calls, self._server_done = self._server_done, []
        await self._transcript.add_assistant(
            completed.content,
            message_id=message_id,
            text="".join(text),
            reasoning="".join(thinking),
            stop_reason=completed.stop_reason,
            output_tokens=completed.usage.output_tokens,
            context_tokens=result.context_tokens,
            announced=announced,
            server_calls=server_calls,
        )
        result.measured_messages = len(self._transcript.messages)
        return completed

    async def _announce(self, call: ToolCall) -> None:
        log.debug("tool call %s: %s%s", call.id, call.name,
                  "" if call.arguments is not None else " (arguments are not a JSON object)")
        presentation, kind = self._registry.presentation(call, self._scope)
        self._open[call.id] = _Call(call, presentation.title, kind, presentation.locations)
        raw_input = call.arguments if call.arguments is not None else {"_unparsed": call.raw_arguments}
        await self._sink.emit(
            ToolCallStarted(call.id, call.name, presentation.title, kind, raw_input, presentation.locations)
        )

    async def _announce_server(self, event: ServerToolUse) -> None:
        """A web call the API makes itself: shown like any call, never run here."""
        shown = presented(event.name, event.input)
        call = ToolCall(event.id, event.name, event.input, "")
        self._server_open[event.id] = _Call(call, shown.title, shown.kind)
        await self._sink.emit(ToolCallStarted(event.id, event.name, shown.title, shown.kind, event.input))

    async def _finish_server(self, block: ServerToolResult) -> None:
        call_id = block.tool_use_id
        if call_id not in self._server_open:
            return  # a result for a call this turn never saw begin: nothing to close
        found = await anyio.to_thread.run_sync(outcome, block)  # scans a fetched page (a cancel meanwhile closes it)
        record = self._server_open.pop(call_id)
        if found.threats and self._input is not None:  # the block goes back as it came: the warning rides
            self._input.add(WebWarning(record.call.name, record.title, found.threats))  # with the next result
        await self._end_server_call(record, found.ok, found.text, found.raw_output)

    async def _end_server_call(self, record: _Call, ok: bool, text: str, raw_output: Any = None) -> None:
        display = (TextDisplay(text),)
        await self._sink.emit(ToolCallFinished(record.call.id, "completed" if ok else "failed", display,
                                               raw_output=raw_output))
        self._server_done.append(ToolOutcome(record.call.id, record.call.name, record.title, record.kind,
                                             record.call.arguments, text, ok, display, (), raw_output=raw_output))

    async def _close_server_calls(self, reason: str) -> None:
        """Web calls the API never finished (a cancel, a broken stream) end as failed."""
        stranded, self._server_open = list(self._server_open.values()), {}
        for record in stranded:
            await self._end_server_call(record, False, reason)

    def _announced_every_call(self, completed: Completed) -> bool:
        return all(b.id in self._open for b in completed.content if isinstance(b, ToolUse))

    async def _end_early(self, message_id: str, text: list[str], thinking: list[str], problem: str) -> None:
        """A model message that could not be completed: keep what was shown (marked incomplete), close
        the calls it announced, and tell the user why the turn stops here."""
        self.result.failure = problem
        await self._save_partial(message_id, text, thinking, "incomplete")
        await self._fail_open_calls("The model's message broke off before this call could run.")
        await self._close_server_calls("The model's message broke off before this call finished.")
        await self._sink.emit(AgentText(str(uuid.uuid4()), f"\n\n⚠️ {problem}\n"))

    async def _save_partial(self, message_id: str, text: list[str], thinking: list[str], reason: str) -> None:
        """Keep what the user already saw of an unfinished message (without its tool calls)."""
        shown = "".join(text)
        if not shown and not thinking:
            return
        content = [Text(shown)] if shown else []
        await self._transcript.add_assistant(
            content,
            message_id=message_id,
            text=shown,
            reasoning="".join(thinking),
            stop_reason=reason,
            output_tokens=None,
        )

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        for batch in self._registry.batches(calls):
            if self._handover is not None:
                break  # the calls after a question may depend on its answer: _hand_over closes them
            outcomes: list[ToolOutcome | None] = [None] * len(batch)
            try:
                if len(batch) == 1:
                    outcomes[0] = await self._run_one(batch[0])
                else:
                    async with anyio.create_task_group() as group:
                        for index, call in enumerate(batch):
                            group.start_soon(self._run_into, call, outcomes, index)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._transcript.add_tool_results([o for o in outcomes if o is not None])
                    await self._fail_open_calls(CANCELLED_RESULT)
                raise
            await self._transcript.add_tool_results([o for o in outcomes if o is not None])

    async def _run_into(self, call: ToolCall, outcomes: list[ToolOutcome | None], index: int) -> None:
        outcomes[index] = await self._run_one(call)

    async def _run_one(self, call: ToolCall) -> ToolOutcome:
        self.result.tools_used.add(call.name)
        record = self._open[call.id]
        ctx = self._make_context(call.id, record.title, _CallSink(self._sink, record))
        began = time.perf_counter()
        hooks = self._controls.hooks
        if hooks is None:
            result = await self._registry.dispatch(call, ctx)
        else:
            result = await hooks.around(call, ctx, lambda: self._registry.dispatch(call, ctx))
        if self._controls.tool_finished is not None:
            self._controls.tool_finished(call, result)
        log.debug("tool call %s: %s %s in %.0f ms", call.id, call.name, "completed" if result.ok else "failed",
                  (time.perf_counter() - began) * 1000)
        text = result.text if self._input is None else self._input.with_result(call.name, call.arguments,
                                                                                 result.text)
        if result.ends_turn is not None:
            self._handover = result.ends_turn
        display = result.display or (TextDisplay(result.text, ""),)
        del self._open[call.id]
        # A call that published a plan: the editor has that as the plan, so its raw output (the same
        # list again, shown as JSON by some clients) stays off the tool call; stored, it restores the tool.
        await self._sink.emit(
            ToolCallFinished(
                call.id,
                "completed" if result.ok else "failed",
                display,
                result.locations,
                result.raw_output if record.plan is None else None,
            )
        )
        return ToolOutcome(
            call_id=call.id,
            name=call.name,
            title=record.title,
            kind=record.kind,
            raw_input=call.arguments,
            text=text,
            ok=result.ok,
            display=display,
            locations=record.locations if result.locations is None else result.locations,
            plan=record.plan,
            raw_output=result.raw_output,
        )

    async def _hand_over(self) -> None:
        """End the turn on a question the user answers in their next prompt: close the calls the
        model planned after it, then say the question (stored for replay; the model's history
        already has it in the call and its result)."""
        await self._fail_open_calls(NOT_RUN_AFTER_QUESTION)
        text, self._handover = f"\n\n{self._handover}", None
        message_id = str(uuid.uuid4())
        await self._sink.emit(AgentText(message_id, text))
        await self._transcript.add_local_reply(text, message_id=message_id)

    async def _fail_open_calls(self, reason: str) -> None:
        """Close every call still open, and give each tool_use in history a result."""
        if not self._open:
            return
        stranded = list(self._open.values())
        self._open.clear()
        outcomes = []
        for record in stranded:
            display = (TextDisplay(reason),)
            await self._sink.emit(ToolCallFinished(record.call.id, "failed", display))
            outcomes.append(
                ToolOutcome(record.call.id, record.call.name, record.title, record.kind, record.call.arguments,
                            reason, False, display, record.locations)  # replayed as it was shown
            )
        # The last assistant message and the results stored so far (a batch may be half done).
        unanswered = {call.id for call in self._transcript.last_calls_left_open()}
        await self._transcript.add_tool_results([o for o in outcomes if o.call_id in unanswered])
