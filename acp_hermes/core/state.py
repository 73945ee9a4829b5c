"""What a session is and has said: its identity, choices, conversation and context figures.

``SessionState`` is the part of a session that a reload rebuilds from the SessionDB (``core.sessions``):
its id and lineage, cwd, choices, title, frozen system prompt and transcript, and the context the last
model call measured. It changes as turns run, and when the conversation goes on from somewhere else:
another process's compaction or additions (``go_on_from``), a compaction here, a rewind. Everything it
reaches outside itself is a service (``core.services``); what one turn does is a ``core.turn.Turn``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core.choices import SessionChoices
from acp_hermes.core.transcript import Transcript

if TYPE_CHECKING:
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.core.loop import TurnResult
    from acp_hermes.core.turn_input import Note
    from acp_hermes_memory.session_db import SessionDB

log = logging.getLogger(__name__)


class SessionState:
    """One session's identity, choices, conversation and context figures."""

    def __init__(self, *, session_id: str, cwd: Path, additional_directories: tuple[Path, ...],
                 choices: SessionChoices, system_prompt: str, transcript: Transcript, title: str | None = None,
                 parent_id: str | None = None, subagent: SubagentSpec | None = None,
                 context: tuple[int, int] = (0, 0), stored_tool_results: list[tuple[str, Any]] | None = None) -> None:
        self.id = session_id
        self.parent_id = parent_id  # the session that started this one (a subagent's parent), if any
        self.subagent = subagent  # what makes this session a delegated task's child, if it is one
        self.cwd = cwd
        self.additional_directories = additional_directories
        self.choices = choices
        self.title = title
        self.system_prompt = system_prompt
        self.transcript = transcript
        # The context the last model call measured (or a compaction or a reload estimated), and how
        # many transcript messages it covers: later ones are estimated (``context_tokens``).
        self.last_context_tokens, self.measured_messages = context
        self.notes: list[Note] = []  # for the model, with the next turn's prompt (what changed meanwhile)
        self.last_turn: TurnResult | None = None  # what the last turn came to (a child's outcome is read from it)
        # (tool name, raw output) of the calls a restored session had completed: its tools get their
        # state back from them when the first turn has loaded the tools anyway.
        self.stored_tool_results: list[tuple[str, Any]] = list(stored_tool_results or ())

    @property
    def depth(self) -> int:
        """How far below a top-level session this one is (a child's children are one deeper)."""
        return self.subagent.depth if self.subagent is not None else 0

    def go_on_from(self, transcript: Transcript, system_prompt: str, context: tuple[int, int]) -> None:
        """The conversation continues from ``transcript`` (a compaction, a rewind, another process's changes)."""
        self.transcript, self.system_prompt = transcript, system_prompt
        self.last_context_tokens, self.measured_messages = context

    def context_tokens(self) -> int:
        """The size of the context the next request sends, as far as it is known: what the last model
        call measured, plus an estimate of the messages stored since (a cancelled or failed turn's
        prompt and partial answer, results of calls cut short)."""
        unmeasured = self.transcript.messages[self.measured_messages:]
        if not unmeasured:
            return self.last_context_tokens
        from acp_hermes.core.compression import estimate_tokens

        return self.last_context_tokens + estimate_tokens(unmeasured)

    # -- rewinding the conversation

    async def can_rewind_to(self, db: SessionDB, prompt_row: int) -> bool:
        """Whether the conversation can go back to just before the prompt stored as ``prompt_row``: it is
        a turn's prompt in the current segment (a compaction since then summarised it away)."""
        from acp_hermes.core.transcript import is_steer

        rows = await anyio.to_thread.run_sync(db.messages, self.transcript.session_id)
        return any(row.id == prompt_row and row.role == "user" and row.payload and not is_steer(row) for row in rows)

    async def rewind_conversation(self, db: SessionDB, prompt_row: int) -> int:
        """Rewind the model's history to just before the prompt stored as ``prompt_row``; the later
        messages are set aside as an ended segment (found by search, not replayed). How many moved."""
        from acp_hermes.core.transcript import history_from_rows, newest_row, restored_context

        segment = self.transcript.session_id

        def rewind() -> tuple[int, list[Any]]:
            before = len(db.messages(segment))
            db.rewind(segment, prompt_row)
            rows = db.messages(segment)
            return before - len(rows), rows

        with anyio.CancelScope(shield=True):
            moved, rows = await anyio.to_thread.run_sync(rewind)
        history = history_from_rows(rows)
        self.go_on_from(Transcript(segment, db, history, synced_to=newest_row(rows)), self.system_prompt,
                        restored_context(self.system_prompt, rows, len(history), carried=segment != self.id))
        log.info("session %s: conversation rewound before message %d (%d set aside)", self.id, prompt_row, moved)
        return moved
