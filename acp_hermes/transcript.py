"""The conversation as the model sees it, appended to the SessionDB as it happens.

Each message is written once, when it is complete (a user prompt, an assistant message with
its tool calls, each tool result) and never rewritten, so a crash loses at most the message
in flight. The stored rows also keep what the editor was shown, so ``session/load`` can
replay the conversation exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.events import Display, Location, PlanEntry, TerminalDisplay, TextDisplay, encode_display

if TYPE_CHECKING:
    from memory.session_db import MessageRecord, SessionDB

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A finished tool call as it is stored: for the model and for replay."""

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

    def result_block(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": self.call_id, "content": self.text}
        if not self.ok:
            block["is_error"] = True
        return block

    def replay_record(self) -> dict[str, Any]:
        # A client terminal is gone after the turn: replay its output as text instead.
        shown = tuple(TextDisplay(self.text, "") if isinstance(d, TerminalDisplay) else d for d in self.display)
        record: dict[str, Any] = {
            "title": self.title,
            "kind": self.kind,
            "rawInput": self.raw_input,
            "status": "completed" if self.ok else "failed",
            "content": encode_display(shown),
            "locations": [{"path": loc.path, "line": loc.line} for loc in self.locations],
        }
        if self.raw_output is not None:
            record["rawOutput"] = self.raw_output
        if self.plan is not None:
            record["plan"] = [{"content": e.content, "status": e.status, "priority": e.priority} for e in self.plan]
        return record


class Transcript:
    """History in Anthropic message format, mirrored row by row into the SessionDB."""

    def __init__(self, session_id: str, db: SessionDB, messages: list[dict[str, Any]] | None = None) -> None:
        self.session_id = session_id
        self._db = db
        self.messages: list[dict[str, Any]] = messages if messages is not None else []

    async def _append_row(self, role: str, content: str, **fields: Any) -> None:
        def write() -> None:
            from memory.session_db import SessionNotFound

            try:
                self._db.append_message(self.session_id, role, content, **fields)
            except SessionNotFound:  # deleted while its turn was winding down: nowhere to keep it
                log.info("session %s was deleted; dropped its %s message", self.session_id, role)

        with anyio.CancelScope(shield=True):  # a cancel must not lose a finished message
            await anyio.to_thread.run_sync(write)

    async def add_user(self, content: list[dict[str, Any]], plain_text: str, prompt: list[dict[str, Any]]) -> None:
        self.messages.append({"role": "user", "content": content})
        await self._append_row("user", plain_text, payload=content, display={"prompt": prompt})

    async def add_assistant(
        self,
        content: list[dict[str, Any]],
        *,
        message_id: str,
        text: str,
        reasoning: str,
        stop_reason: str,
        output_tokens: int | None,
    ) -> None:
        tool_calls = [
            {"id": b["id"], "name": b["name"], "arguments": b.get("input", {})}
            for b in content
            if b.get("type") == "tool_use"
        ]
        if content:
            self.messages.append({"role": "assistant", "content": content})
        await self._append_row(
            "assistant",
            text,
            payload=content,
            display={"messageId": message_id},
            tool_calls=tool_calls or None,
            reasoning=reasoning or None,
            finish_reason=stop_reason,
            token_count=output_tokens,
        )

    async def add_tool_results(self, outcomes: Sequence[ToolOutcome]) -> None:
        """Store finished calls (in call order) and add their results to the history."""
        if not outcomes:
            return
        blocks = [outcome.result_block() for outcome in outcomes]
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "user" and _is_tool_results(last["content"]):
            last["content"] = [*last["content"], *blocks]
        else:
            self.messages.append({"role": "user", "content": blocks})
        for outcome, block in zip(outcomes, blocks, strict=True):
            await self._append_row(
                "tool",
                outcome.text,
                tool_call_id=outcome.call_id,
                tool_name=outcome.name,
                payload=block,
                display=outcome.replay_record(),
            )


def _is_tool_results(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(b.get("type") == "tool_result" for b in content)


def history_from_rows(rows: Sequence[MessageRecord]) -> list[dict[str, Any]]:
    """Rebuild the model's view of a stored conversation."""
    messages: list[dict[str, Any]] = []
    for row in rows:
        if row.role == "tool":
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "user" and _is_tool_results(last["content"]):
                last["content"].append(row.payload)
            else:
                messages.append({"role": "user", "content": [row.payload]})
        elif row.payload:
            messages.append({"role": row.role, "content": list(row.payload)})
    return messages
