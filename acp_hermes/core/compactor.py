"""Compaction of a live session: the memory flush, the summary, the new segment, the visible card.

``core.compression`` decides what to keep and asks for the summary; this module carries it out
for one session. Before anything is dropped the model gets one hidden call (the flush) in which
it may save memories; its calls of the tools the flush may use (``Tool.flushed``: the memory tool)
run (visibly, through the gate), nothing else of it is kept. The middle of the conversation is
then summarised by the auxiliary model, and the continuation is stored as a child segment in the
SessionDB (``source='compression'``, ``parent_session_id`` the old segment, which ends with
``end_reason='compression'``). The editor's session id does not change: the session writes to the
new segment from now on, and a ``session/load`` replays every segment. The system prompt is
rebuilt here, the one point where the cache prefix may change.

Another process may hold the same session (an editor window of its own). The new segment is stored
and the old one ended in one transaction, which carries in what that process stored in the old
segment while this one summarised; what it stores later goes to the new segment
(``SessionDB.append_message``). When it compacted first, this one goes on from its continuation
instead of making a second. Either way the model's history loses no message.

The summary is scanned like other external text (``context`` scope): a model wrote it from tool
output. When it trips the scanner, when the turns it replaces held a tool result the registry
flagged, or when the summary it updates was flagged, it carries a warning into the new history
(``compression.summary_warning``) and on the card, so compaction never launders a poisoned tool
result into trusted text.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core import compression
from acp_hermes.core.events import EventSink, ToolCallFinished, ToolCallStarted
from acp_hermes.core.history import repaired
from acp_hermes.core.notices import notice
from acp_hermes.core.transcript import ToolOutcome, Transcript, history_from_rows, newest_row, stored_conversation
from acp_hermes.model.messages import Message, Text, ToolUse
from acp_hermes.model.types import Completed, ModelError, ModelRequest
from acp_hermes_memory.scan import scan
from acp_hermes_memory.session_db import NewMessage, SessionNotFound
from acp_hermes_tools.contracts import TextDisplay
from acp_hermes_tools.registry import ToolCall, ToolRegistry

if TYPE_CHECKING:
    from acp_hermes.core.runtime import SessionAuxiliary
    from acp_hermes.model.types import Provider
    from acp_hermes_memory.session_db import MessageRecord, SessionDB
    from acp_hermes_tools.context import ToolContext, ToolScope
    from acp_hermes_tools.contracts import ToolEventSink

log = logging.getLogger(__name__)

CARD_TOOL = "compact"  # the tool name of the stored compaction card
TAIL_SHARE = 0.2  # of the compaction threshold, kept verbatim at the end (at least 20 messages)
MAX_TAIL_OF_CONVERSATION = 0.4


@dataclass(frozen=True, slots=True)
class Compaction:
    """What happened, for the reply of ``/compact`` and the log."""

    done: bool
    before_tokens: int
    after_tokens: int
    message: str


@dataclass
class CompactionTarget:
    """The parts of a session compaction needs (the session hands them over; no cycle)."""

    root_id: str  # the editor's session id
    transcript: Transcript
    system_prompt: str
    model: str
    window: int
    threshold: float
    sink: EventSink
    provider: Provider
    registry: ToolRegistry
    scope: ToolScope
    auxiliary: SessionAuxiliary
    db: SessionDB
    make_context: Callable[[str, str, ToolEventSink], ToolContext]
    rebuild_prompt: Callable[[], str]
    flush: bool = True


async def compact(target: CompactionTarget, *, focus: str | None = None, manual: bool = False) -> Compaction:
    """Compact ``target``'s conversation; its transcript and system prompt are replaced on success."""
    messages = list(target.transcript.messages)
    before = compression.estimate_tokens(messages) + len(target.system_prompt) // compression.CHARS_PER_TOKEN
    # The tail kept verbatim: a share of the threshold, and never most of what there is (/compact).
    tail_budget = int(min(target.window * target.threshold * TAIL_SHARE, before * MAX_TAIL_OF_CONVERSATION))
    plan = compression.plan_compression(
        messages, tail_budget_tokens=tail_budget, min_tail_messages=4 if manual else 20,
        min_middle_tokens=1 if manual else 1_000,
    )
    if plan is None:
        return Compaction(False, before, before, "Nothing to compact yet: the conversation is still short.")
    card = f"compact-{uuid.uuid4()}"
    await target.sink.emit(ToolCallStarted(card, CARD_TOOL, "Compacting conversation", "other",
                                           {"focus": focus} if focus else {}))
    await target.sink.emit(notice("compaction", f"Compacting the conversation: about {before:,} tokens.", shown=""))
    if target.flush:
        await _flush_memories(target)
    pruned = plan.with_old_outputs_pruned()
    previous = compression.previous_summary(messages)
    system, prompt = compression.summary_request(pruned.middle, previous, focus)
    budget = compression.summary_budget(compression.estimate_tokens(pruned.middle), target.window)
    try:
        summary = await target.auxiliary.complete(system=system, prompt=prompt, max_tokens=budget)
        summary = compression.without_warning(summary)
    except ModelError as error:
        summary, failure = "", str(error)
    else:
        failure = "the summary came back empty"
    if not summary:
        log.warning("compaction failed: %s", failure)
        await target.sink.emit(ToolCallFinished(card, "failed", (TextDisplay(f"Compaction failed: {failure}"),)))
        said = f"Compaction failed: {failure.rstrip('.')}. The conversation is unchanged."
        await target.sink.emit(notice("compaction", said, shown="", severity="warning"))
        return Compaction(False, before, before, f"Compaction failed ({failure}); the conversation is unchanged.")
    warning = await _warning(summary, plan.middle, previous)
    history = compression.compressed_history(pruned, summary, warning)
    system_prompt = await anyio.to_thread.run_sync(target.rebuild_prompt)
    after = compression.estimate_tokens(history) + len(system_prompt) // compression.CHARS_PER_TOKEN
    shown_summary = f"{warning}\n\n{summary}" if warning else summary
    shown = (TextDisplay(f"Context: about {before:,} → {after:,} tokens.\n\n{shown_summary}"),)
    raw_output: dict[str, Any] = {"before_tokens": before, "after_tokens": after, "summary": summary}
    if warning:
        raw_output["warning"] = warning
    read = (target.transcript.synced_to, frozenset(target.transcript.own_rows))  # here: appends change them
    stored = await anyio.to_thread.run_sync(_store_segment, target, read, history, system_prompt, card,
                                            shown[0].text, raw_output)
    if stored is None:
        return await _adopt(target, card, before)
    segment, rows = stored
    # What another process stored meanwhile was carried in after the kept history: the rows say it all.
    target.transcript = Transcript(segment, target.db, history_from_rows(rows), synced_to=newest_row(rows))
    target.system_prompt = system_prompt
    after = compression.estimate_tokens(target.transcript.messages) + len(system_prompt) // compression.CHARS_PER_TOKEN
    await target.sink.emit(ToolCallFinished(card, "completed", shown, raw_output=raw_output))
    await target.sink.emit(notice("compaction", f"Compacted the conversation: about {before:,} → {after:,} tokens.",
                                  shown=""))
    log.info("session %s compacted: ~%d → ~%d tokens (segment %s)", target.root_id, before, after, segment)
    return Compaction(True, before, after, f"Compacted the conversation: about {before:,} → {after:,} tokens.")


ADOPTED = "Another window compacted this conversation at the same time; going on from its summary."


async def _adopt(target: CompactionTarget, card: str, before: int) -> Compaction:
    """Another process (an editor window of its own on this session) compacted the conversation first:
    go on from its continuation, which holds everything either stored, instead of a second one."""
    stored = await anyio.to_thread.run_sync(stored_conversation, target.db, target.root_id)
    if stored is None:
        raise SessionNotFound(target.root_id)
    target.transcript, target.system_prompt = stored.transcript, stored.system_prompt
    after = (compression.estimate_tokens(stored.transcript.messages)
             + len(stored.system_prompt) // compression.CHARS_PER_TOKEN)
    await target.sink.emit(ToolCallFinished(card, "completed", (TextDisplay(ADOPTED),)))
    await target.sink.emit(notice("compaction", ADOPTED, shown=""))
    log.info("session %s: compacted by another process first; going on from segment %s", target.root_id,
             stored.transcript.session_id)
    return Compaction(True, before, after, ADOPTED)


async def _warning(summary: str, middle: Sequence[Message], previous: str | None) -> str | None:
    """The warning the summary carries (see ``compression.summary_warning``), logged when there is one."""
    findings = await anyio.to_thread.run_sync(scan, summary, "context")
    ids = [finding.pattern_id for finding in findings]
    warning = compression.summary_warning(ids, compression.flagged_tools(middle), previous)
    if warning is not None:
        log.warning("the compaction summary carries a warning: %s", warning)
    return warning


async def _flush_memories(target: CompactionTarget) -> None:
    """One hidden model call that may save memories; its instruction and reply are not kept."""
    messages = repaired([*target.transcript.messages, Message("user", (Text(compression.FLUSH_INSTRUCTION),))])
    request = ModelRequest(model=target.model, system=target.system_prompt, messages=messages,
                           tools=target.registry.definitions(), max_tokens=2_048)
    completed: Completed | None = None
    try:
        async for event in target.provider.stream(request):
            if isinstance(event, Completed):
                completed = event
    except ModelError as error:
        log.warning("memory flush before compaction failed: %s", error)
        return
    if completed is not None:  # a full-context request: its cost is the session's like any other
        auxiliary = target.auxiliary
        await anyio.to_thread.run_sync(auxiliary.runtime.record_usage, auxiliary.session_id, target.model,
                                       completed.usage)
    for block in completed.content if completed is not None else ():
        tool = target.registry.get(block.name) if isinstance(block, ToolUse) else None
        if isinstance(block, ToolUse) and tool is not None and tool.flushed:  # what it may use (``Tool.flushed``)
            await _run_flush_call(target, block)


async def _run_flush_call(target: CompactionTarget, block: ToolUse) -> None:
    from acp_hermes.core.side_calls import run_beside_turn

    call = ToolCall(block.id, block.name, block.input or {})
    presentation, kind = target.registry.presentation(call, target.scope)
    await run_beside_turn(call, presentation.title, kind, registry=target.registry, sink=target.sink,
                          make_context=target.make_context, transcript=target.transcript)


def _store_segment(target: CompactionTarget, read: tuple[int, frozenset[int]], history: Sequence[Message],
                   system_prompt: str, card: str, card_text: str,
                   raw_output: dict[str, Any]) -> tuple[str, list[MessageRecord]] | None:
    """The continuation segment, stored with the end of the old one in one transaction: the card
    (replayed), the kept history (carried, not replayed) and whatever another process stored in the old
    segment since this one read it (carried too: ``read`` is the transcript's ``synced_to`` and
    ``own_rows``). Its id and rows; None when another process compacted the old segment first."""
    shown = ToolOutcome(call_id=card, name=CARD_TOOL, title="Compacting conversation", kind="other", raw_input={},
                        text=card_text, ok=True, display=(TextDisplay(card_text),), locations=(),
                        raw_output=raw_output)
    messages = [NewMessage("tool", card_text, tool_call_id=card, tool_name=CARD_TOOL, display=shown.display_record())]
    from acp_hermes.model.provider import blocks_to_wire

    for message in history:
        messages.append(NewMessage(message.role, "", payload=blocks_to_wire(message.blocks), display={"carried": True}))
    segment = str(uuid.uuid4())
    read_up_to, own = read
    rows = target.db.continue_segment(target.transcript.session_id, segment, system_prompt=system_prompt,
                                      messages=messages, read_up_to=read_up_to, own=own)
    return None if rows is None else (segment, rows)
