"""The conversation as the model sees it, appended to the SessionDB as it happens.

Each message is written once, when it is complete (a user prompt, an assistant message with
its tool calls, each tool result) and never rewritten, so a crash loses at most the message
in flight. Each row also keeps what the user was shown (its ``display`` record, in this
module's field names), so a reloaded session can show the conversation exactly again:
``stored_messages`` reads the rows back as typed records for whoever renders them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core.history import INTERRUPTED, unanswered_calls
from acp_hermes.core.user_prompt import PromptPart, TextPart, from_record, to_record
from acp_hermes.model.messages import Block, Message, ToolResult, ToolUse
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import DiffDisplay, Display, Location, PlanEntry, TerminalDisplay, TextDisplay

if TYPE_CHECKING:
    from acp_hermes.core.steering import Steer
    from acp_hermes_memory.session_db import MessageRecord, SegmentNews, SessionDB

log = logging.getLogger(__name__)


@value
class ToolOutcome:
    """A finished tool call: as it is stored (for the model and for replay) and as it is read back
    (``stored_messages``; ``text`` is the result the model read, "" for a call the model API ran)."""

    call_id: str
    name: str
    title: str
    kind: str
    raw_input: Any
    text: str
    ok: bool
    display: tuple[Display, ...]
    locations: tuple[Location, ...]
    plan: tuple[PlanEntry, ...] | None = None
    raw_output: Any = None

    def result_block(self) -> ToolResult:
        return ToolResult(self.call_id, self.text, is_error=not self.ok)

    def display_record(self) -> dict[str, Any]:
        # A client terminal is gone after the turn: replay its output as text instead.
        shown = tuple(TextDisplay(self.text, "") if isinstance(d, TerminalDisplay) else d for d in self.display)
        record: dict[str, Any] = {
            "title": self.title,
            "kind": self.kind,
            "raw_input": self.raw_input,
            "status": "completed" if self.ok else "failed",
            "display": encode_display(shown),
            "locations": _location_records(self.locations),
        }
        if self.raw_output is not None:
            record["raw_output"] = self.raw_output
        if self.plan is not None:
            record["plan"] = [{"content": e.content, "status": e.status, "priority": e.priority} for e in self.plan]
        return record


@value
class AnnouncedCall:
    """How a tool call was shown when the model made it (kept with the assistant message): what a
    call the process never finished is replayed with."""

    title: str
    kind: str
    locations: tuple[Location, ...] = ()

    def record(self) -> dict[str, Any]:
        return {"title": self.title, "kind": self.kind, "locations": _location_records(self.locations)}


def _location_records(locations: Sequence[Location]) -> list[dict[str, Any]]:
    return [{"path": loc.path, "line": loc.line} for loc in locations]


def _locations(records: Any) -> tuple[Location, ...]:
    return tuple(Location(loc["path"], loc.get("line")) for loc in records or [] if isinstance(loc, dict)
                 and isinstance(loc.get("path"), str))


class Transcript:
    """History as typed messages, mirrored row by row into the SessionDB (each row's payload in the
    Messages API's form: ``model.provider`` converts).

    Another process may hold the same conversation (an editor window of its own on the session) and
    store messages in it or compact it. ``synced_to`` and ``own_rows`` tell those apart from this
    transcript's own: its segment's rows up to ``synced_to`` are in ``messages``, and so are the rows it
    stored itself; any other row after ``synced_to`` was stored elsewhere (``in_step``).
    """

    def __init__(self, session_id: str, db: SessionDB, messages: list[Message] | None = None, *,
                 synced_to: int = 0) -> None:
        self.session_id = session_id
        self._db = db
        self.messages: list[Message] = messages if messages is not None else []
        self.synced_to = synced_to  # the newest row of its segment that ``messages`` was read from
        self.own_rows: set[int] = set()  # the rows it stored since (wherever they landed)
        # The client's own id for the prompt stored next (ACP ``messageId``), kept with it: rewind points name it.
        self.client_message_id: str | None = None
        self.last_prompt_row: int | None = None  # the row of the last prompt stored: where its turn begins

    async def _append_row(self, role: str, content: str, **fields: Any) -> int | None:
        def write() -> int | None:
            from acp_hermes_memory.session_db import SessionNotFound

            try:
                return self._db.append_message(self.session_id, role, content, **fields)
            except SessionNotFound:  # deleted while its turn was winding down: nowhere to keep it
                log.info("session %s was deleted; dropped its %s message", self.session_id, role)
                return None

        with anyio.CancelScope(shield=True):  # a cancel must not lose a finished message
            row = await anyio.to_thread.run_sync(write)
        if row is not None:
            self.own_rows.add(row)
        return row

    def in_step(self, news: SegmentNews | None) -> bool:
        """Whether ``messages`` is still the conversation as stored, given what changed in its segment
        since ``synced_to`` (``SessionDB.segment_news``): not when a compaction ended the segment or
        another process stored a message in it. When it is, ``synced_to`` moves on past its own rows."""
        if news is None:  # deleted: nothing stored to go on from
            return True
        if news.ended or not self.own_rows.issuperset(news.message_ids):
            return False
        if news.message_ids:
            self.synced_to = news.message_ids[-1]
            self.own_rows.difference_update(news.message_ids)
        return True

    async def _append_prompt(self, plain_text: str, prompt: Sequence[PromptPart], **fields: Any) -> None:
        display: dict[str, Any] = {"prompt": [to_record(p) for p in prompt]}
        if self.client_message_id:
            display["client_message_id"], self.client_message_id = self.client_message_id, None
        else:  # the id its replay shows, stored so every load (and a fork's copy) shows the same one
            display["message_id"] = new_message_id()
        self.last_prompt_row = await self._append_row("user", plain_text, display=display, **fields)

    async def add_side_call(self, outcome: ToolOutcome) -> None:
        """Store a call the agent made beside the conversation (a background review's write, a held
        proposal): replayed to the editor, never part of the model's history."""
        await self._append_row("tool", outcome.text, tool_call_id=outcome.call_id, tool_name=outcome.name,
                               display=outcome.display_record())

    async def add_local_prompt(self, plain_text: str, prompt: Sequence[PromptPart]) -> None:
        """Store a prompt answered here without the model (a slash command): replayed to the editor,
        never part of the model's history (a row without payload)."""
        await self._append_prompt(plain_text, prompt)

    async def add_local_reply(self, text: str, *, message_id: str) -> None:
        """Store agent text the model did not write (a command's reply, a question put to the user in
        the chat): replayed to the editor, never part of the model's history."""
        await self._append_row("assistant", text, display={"message_id": message_id})

    async def add_user(self, content: Sequence[Block], plain_text: str, prompt: Sequence[PromptPart]) -> None:
        from acp_hermes.model.provider import blocks_to_wire

        self.messages.append(Message("user", tuple(content)))
        await self._append_prompt(plain_text, prompt, payload=blocks_to_wire(content))

    async def add_steer(self, steer: Steer, content: tuple[Block, ...]) -> str:
        """Store what the user sent into the running turn as the model reads it (``content``) at its next
        request: added to the last message when that is the user's (the results of the calls that just
        ran), so roles keep alternating and everything before it, the cached prefix, stays as it was.
        The id it is shown with, live and in replay."""
        from acp_hermes.model.provider import blocks_to_wire

        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "user":
            self.messages[-1] = last.plus(content)
        else:
            self.messages.append(Message("user", content))
        display: dict[str, Any] = {"prompt": [to_record(p) for p in steer.parts], STEER_KEY: True}
        if steer.client_message_id:
            display["client_message_id"] = steer.client_message_id
        else:
            display["message_id"] = new_message_id()
        await self._append_row("user", steer.plain_text, payload=blocks_to_wire(content), display=display)
        return str(display.get("client_message_id") or display["message_id"])

    async def add_assistant(
        self,
        content: Sequence[Block],
        *,
        message_id: str,
        text: str,
        reasoning: str,
        stop_reason: str,
        output_tokens: int | None,
        context_tokens: int | None = None,
        announced: Mapping[str, AnnouncedCall] | None = None,
        server_calls: Sequence[ToolOutcome] = (),
    ) -> None:
        """Store a model message; ``context_tokens`` is the context the request and its answer
        measured (what a reloaded session's gauge shows), ``announced`` how its calls were shown,
        ``server_calls`` the web calls the API made in it, as they were shown (replayed before its text)."""
        from acp_hermes.model.provider import blocks_to_wire

        tool_calls = [{"id": b.id, "name": b.name, "arguments": b.input} for b in content if isinstance(b, ToolUse)]
        if content:
            self.messages.append(Message("assistant", tuple(content)))
        display: dict[str, Any] = {"message_id": message_id}
        if context_tokens:
            display["context_tokens"] = context_tokens
        if announced:
            display["calls"] = {call_id: call.record() for call_id, call in announced.items()}
        if server_calls:
            display[SERVER_CALLS_KEY] = [{"call_id": o.call_id, "name": o.name, **o.display_record()}
                                         for o in server_calls]
        await self._append_row(
            "assistant",
            text,
            payload=blocks_to_wire(content),
            display=display,
            tool_calls=tool_calls or None,
            reasoning=reasoning or None,
            finish_reason=stop_reason,
            token_count=output_tokens,
        )

    def last_calls_left_open(self) -> list[ToolUse]:
        """The tool calls of the last assistant message that have no result yet (all of them, or
        the rest of a batch cut short), when nothing came after their results."""
        tail = self.messages[-2:]
        if not tail or not (tail[-1].role == "assistant" or tail[-1].only_results()):
            return []
        return unanswered_calls(tail)

    def close_interrupted(self, calls: Sequence[ToolUse],
                          announced: Mapping[str, AnnouncedCall] | None = None) -> None:
        """Give tool calls a process left without results an "interrupted" result, stored now
        (blocking: a restored session does it before anything else touches it). Each keeps the
        title, kind and locations it was ``announced`` with (its tool's name when unknown)."""
        from acp_hermes.model.provider import block_to_wire

        shown = announced or {}
        outcomes = []
        for call in calls:
            call_id, name = call.id, call.name or "tool"
            seen = shown.get(call_id) or AnnouncedCall(name, "other")
            outcomes.append(ToolOutcome(
                call_id=call_id,
                name=name,
                title=seen.title,
                kind=seen.kind,
                raw_input=call.input,
                text=INTERRUPTED,
                ok=False,
                display=(TextDisplay(INTERRUPTED),),
                locations=seen.locations,
            ))
        self._add_results(outcomes)
        for outcome in outcomes:
            self.own_rows.add(self._db.append_message(
                self.session_id, "tool", outcome.text, tool_call_id=outcome.call_id, tool_name=outcome.name,
                payload=block_to_wire(outcome.result_block()), display=outcome.display_record(),
            ))

    def _add_results(self, outcomes: Sequence[ToolOutcome]) -> list[ToolResult]:
        blocks = [outcome.result_block() for outcome in outcomes]
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "user" and last.only_results():
            self.messages[-1] = last.plus(blocks)
        else:
            self.messages.append(Message("user", tuple(blocks)))
        return blocks

    async def add_tool_results(self, outcomes: Sequence[ToolOutcome]) -> None:
        """Store finished calls (in call order) and add their results to the history."""
        if not outcomes:
            return
        from acp_hermes.model.provider import block_to_wire

        blocks = self._add_results(outcomes)
        for outcome, block in zip(outcomes, blocks, strict=True):
            await self._append_row(
                "tool",
                outcome.text,
                tool_call_id=outcome.call_id,
                tool_name=outcome.name,
                payload=block_to_wire(block),
                display=outcome.display_record(),
            )


STEER_KEY = "steer"  # marks a stored prompt the user sent into a running turn
SERVER_CALLS_KEY = "server_calls"  # the web calls the API made in a stored model message, as shown


def is_steer(row: MessageRecord) -> bool:
    """A user row sent into a running turn: part of that turn, not the start of one."""
    return isinstance(row.display, dict) and bool(row.display.get(STEER_KEY))


def history_from_rows(rows: Sequence[MessageRecord]) -> list[Message]:
    """Rebuild the model's view of a stored conversation."""
    from acp_hermes.model.provider import blocks_from_wire

    messages: list[Message] = []
    for row in rows:
        if row.role == "tool" and row.payload is None:
            continue  # a card of the agent's own (a compaction), not part of the model's history
        if row.role == "tool":
            result = blocks_from_wire([row.payload])
            last = messages[-1] if messages else None
            if last is not None and last.role == "user" and last.only_results():
                messages[-1] = last.plus(result)
            else:
                messages.append(Message("user", result))
        elif row.payload:  # without one, the row was only shown (a slash command and its reply)
            blocks = blocks_from_wire(row.payload)
            if is_steer(row) and messages and messages[-1].role == "user":
                messages[-1] = messages[-1].plus(blocks)  # as it was sent (Transcript.add_steer)
            else:
                messages.append(Message(row.role, blocks))
    return messages


def newest_row(rows: Sequence[MessageRecord]) -> int:
    """The id of the newest of ``rows`` (0 for none): a transcript read from them is in step up to it."""
    return max((row.id for row in rows), default=0)


@value
class StoredConversation:
    """A conversation as the SessionDB holds it now: its current segment's history, ready to go on."""

    transcript: Transcript
    system_prompt: str
    context: tuple[int, int]  # as ``restored_context`` measures it


def stored_conversation(db: SessionDB, root_id: str) -> StoredConversation | None:
    """The conversation ``root_id`` as stored now, after every compaction of it (blocking): what a
    process goes on from when another one changed it. None when it was deleted."""
    segments = db.segments(root_id)
    if not segments:
        return None
    current = segments[-1]
    rows = db.messages(current.id)
    history = history_from_rows(rows)
    system_prompt = current.system_prompt or ""
    return StoredConversation(
        Transcript(current.id, db, history, synced_to=newest_row(rows)), system_prompt,
        restored_context(system_prompt, rows, len(history), carried=current.id != root_id))


def final_answer(messages: Sequence[Message]) -> str:
    """The text of the last assistant message that has any."""
    for message in reversed(messages):
        if message.role == "assistant" and (text := message.text()).strip():
            return text
    return ""


def announced_calls(rows: Sequence[MessageRecord]) -> dict[str, AnnouncedCall]:
    """How the tool calls of the stored assistant messages were shown when the model made them."""
    found: dict[str, AnnouncedCall] = {}
    for row in rows:
        calls = row.display.get("calls") if row.role == "assistant" and isinstance(row.display, dict) else None
        if not isinstance(calls, dict):
            continue
        for call_id, record in calls.items():
            if isinstance(record, dict) and isinstance(record.get("title"), str):
                found[call_id] = AnnouncedCall(record["title"], str(record.get("kind") or "other"),
                                               _locations(record.get("locations")))
    return found


def last_measured(rows: Sequence[MessageRecord]) -> tuple[int, int] | None:
    """The context the last measured model call reported, and the index of its row."""
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if row.role == "assistant" and isinstance(row.display, dict):
            tokens = row.display.get("context_tokens")
            if isinstance(tokens, int) and tokens > 0:
                return tokens, index
    return None


# --- stored rows as typed records ----------------------------------------------------------------


@value
class StoredPrompt:
    message_id: str
    parts: tuple[PromptPart, ...]


@value
class StoredReply:
    message_id: str
    text: str
    reasoning: str


StoredMessage = StoredPrompt | StoredReply | ToolOutcome


def prompt_message_id(row_id: int) -> str:
    """The id of a prompt stored before prompts kept an id of their own (replay, rewind points)."""
    return f"user-{row_id}"


def new_message_id() -> str:
    """A message's id, made once and stored with it: the same in the chat, every replay and a fork."""
    return str(uuid.uuid4())


def stored_message_id(row: MessageRecord) -> str:
    """The id a stored message is shown with (``messageId`` on its chunks, live and in replay): the
    client's for a prompt that came with one, else the one stored with it; rows older than stored ids
    are named after their row."""
    display = row.display if isinstance(row.display, dict) else {}
    if row.role == "user":
        return str(display.get("client_message_id") or display.get("message_id") or prompt_message_id(row.id))
    return str(display.get("message_id") or f"agent-{row.id}")


def stored_messages(rows: Sequence[MessageRecord]) -> Iterator[StoredMessage]:
    """The conversation in the order the user saw it."""
    for row in rows:
        display = row.display if isinstance(row.display, dict) else {}
        if display.get("carried"):
            continue  # history a compaction carried into a new segment: the user saw it already
        if row.role == "user":
            prompt = display.get("prompt")
            records = prompt if isinstance(prompt, list) and prompt else None
            parts = tuple(from_record(r) for r in records) if records else (TextPart(row.content),)
            yield StoredPrompt(stored_message_id(row), parts)
        elif row.role == "assistant":
            for call in display.get(SERVER_CALLS_KEY) or ():
                yield _stored_call(str(call.get("call_id")), str(call.get("name") or "web"), "", call)
            yield StoredReply(stored_message_id(row), row.content, row.reasoning or "")
        elif row.role == "tool":
            yield _stored_tool_call(row, display)


def _stored_tool_call(row: MessageRecord, display: dict[str, Any]) -> ToolOutcome:
    return _stored_call(row.tool_call_id or f"call-{row.id}", row.tool_name or "tool", row.content, display)


def _stored_call(call_id: str, name: str, text: str, display: dict[str, Any]) -> ToolOutcome:
    """A call as it was shown (``ToolOutcome.display_record``)."""
    plan = display.get("plan")
    return ToolOutcome(
        call_id=call_id,
        name=name,
        title=display.get("title") or name,
        kind=display.get("kind") or "other",
        raw_input=display.get("raw_input"),
        text=text,
        ok=display.get("status") == "completed",
        display=decode_display(display.get("display") or []),
        locations=_locations(display.get("locations")),
        raw_output=display.get("raw_output"),
        plan=None if plan is None else tuple(
            PlanEntry(e["content"], e.get("status", "pending"), e.get("priority", "medium")) for e in plan
        ),
    )


def encode_display(items: Sequence[Display]) -> list[dict[str, Any]]:
    """Display values as JSON-able records."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, TextDisplay):
            out.append({"type": "text", "text": item.text, "fence": item.fence})
        elif isinstance(item, DiffDisplay):
            out.append({"type": "diff", "path": item.path, "old": item.old_text, "new": item.new_text})
        else:
            out.append({"type": "terminal", "id": item.terminal_id})
    return out


def decode_display(data: list[dict[str, Any]]) -> tuple[Display, ...]:
    items: list[Display] = []
    for item in data:
        kind = item.get("type")
        if kind == "text":
            items.append(TextDisplay(item["text"], item.get("fence")))
        elif kind == "diff":
            items.append(DiffDisplay(item["path"], item.get("old"), item["new"]))
        elif kind == "terminal":
            items.append(TerminalDisplay(item["id"]))
    return tuple(items)


def restored_context(system_prompt: str, rows: Sequence[MessageRecord], message_count: int, *,
                      carried: bool) -> tuple[int, int]:
    """The context a restored conversation holds, as ``Session`` keeps it: the figure the last model
    call measured (stored with its message; the gauge then reads as it did after that turn) and how
    many of the ``message_count`` messages it covers. A conversation stored before figures were kept
    is estimated whole."""
    measured = last_measured(rows)
    if measured is None:
        return _estimated_context(system_prompt, rows, carried=carried), message_count
    tokens, index = measured
    return tokens, message_count - len(history_from_rows(rows[index + 1:]))


def _estimated_context(system_prompt: str, rows: Sequence[MessageRecord], *, carried: bool) -> int:
    """Roughly how many tokens a restored conversation holds (about 4 characters a token), so the
    editor's context gauge is not empty until the next model call reports the exact figure. Rows a
    compaction carried over have no text of their own: their content counts instead."""
    characters = len(system_prompt) + sum(len(row.content) + len(row.reasoning or "") for row in rows)
    if not carried:
        return characters // 4
    from acp_hermes.core.compression import estimate_tokens
    from acp_hermes.model.provider import blocks_from_wire

    kept = [Message(row.role, blocks_from_wire(row.payload)) for row in rows
            if isinstance(row.display, dict) and row.display.get("carried") and row.payload]
    return characters // 4 + estimate_tokens(kept)
