"""What a SessionDB hands out and takes in: its records, and the kinds of session it tells apart.

Column names follow Hermes's ``state.db`` where the meaning is the same (reference/hermes.md §19).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_hermes_memory.values import value

ROLES = frozenset({"user", "assistant", "tool"})
CONTINUATION_SOURCE = "compression"  # a session that continues its parent after context compression
SUBAGENT_SOURCE = "subagent"  # a child session delegate_task started; its parent is the session that delegated
REWOUND_SOURCE = "rewound"  # the messages a rewind took out of a conversation; its parent is the segment they left
REWOUND_MARK = " (rewound)"  # after the title of that segment, as the branch's title
# Sessions that are not a conversation of their own (a fork of one is: it goes on by itself).
NOT_OWN_CONVERSATIONS = (CONTINUATION_SOURCE, SUBAGENT_SOURCE, REWOUND_SOURCE)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of ``sessions``; JSON columns are decoded."""

    id: str
    source: str
    model: str | None
    model_config: dict[str, Any]
    system_prompt: str | None
    parent_session_id: str | None
    started_at: float
    updated_at: float
    ended_at: float | None
    end_reason: str | None
    message_count: int
    tool_call_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    api_call_count: int
    estimated_cost_usd: float
    cwd: str | None
    mode: str | None
    additional_directories: list[str]
    title: str | None
    archived: bool

    @property
    def subagent_label(self) -> str | None:
        """How listings and search results mark a subagent session: ``subagent of <the parent's id
        cut to 8>`` (``subagent`` once its parent is deleted); None for any other session."""
        if self.source != SUBAGENT_SOURCE:
            return None
        return f"subagent of {self.parent_session_id[:8]}" if self.parent_session_id else "subagent"

    @property
    def rewound_label(self) -> str | None:
        """How listings and search results mark a rewind's branch: ``rewound from <the id of the segment
        it came from cut to 8>`` (``rewound`` once that is deleted); None for any other session."""
        if self.source != REWOUND_SOURCE:
            return None
        return f"rewound from {self.parent_session_id[:8]}" if self.parent_session_id else "rewound"

    @property
    def label(self) -> str | None:
        """The mark of a session that is not a conversation of its own (``subagent_label``, ``rewound_label``)."""
        return self.subagent_label or self.rewound_label

    @property
    def bare_title(self) -> str | None:
        """The title to show before ``label``: a rewind's branch's without the `` (rewound)`` its label
        says better (``Fix it (rewound from 1a2b3c4d)``, not ``Fix it (rewound) (rewound from …)``)."""
        if self.source == REWOUND_SOURCE and self.title is not None and self.title.endswith(REWOUND_MARK):
            return self.title.removesuffix(REWOUND_MARK) or None
        return self.title


@value
class SubagentTotals:
    """What a session's subagents (at any depth) used, for its usage report."""

    sessions: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    cache_tokens: int = 0  # cache reads and writes together

    @property
    def tokens(self) -> int:
        """Every token they processed: input (cached or not) and output."""
        return self.input_tokens + self.output_tokens + self.cache_tokens


@dataclass(slots=True)
class MessageRecord:
    """One row of ``messages``; ``tool_calls``, ``payload`` and ``display`` are decoded JSON.

    Not frozen: a frozen dataclass sets each field through object.__setattr__, which made
    building the records of a 5,000-message session cost more than reading its rows.
    """

    id: int
    session_id: str
    role: str
    content: str
    tool_call_id: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_name: str | None
    timestamp: float
    token_count: int | None
    finish_reason: str | None
    reasoning: str | None
    active: bool
    compacted: bool
    payload: Any
    display: Any


@value
class SearchHit:
    """One matching message with its snippet (matches wrapped in SNIPPET_OPEN/SNIPPET_CLOSE)."""

    message_id: int
    session_id: str
    role: str
    snippet: str
    rank: float
    timestamp: float
    tool_name: str | None
    session_title: str | None
    session_cwd: str | None
    session_started_at: float


@value
class NewMessage:
    """A message to store as part of a larger write (``continue_segment``): ``append_message``'s fields."""

    role: str
    content: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    payload: Any = None
    display: Any = None


@value
class SegmentNews:
    """What changed in a segment since a process last read it (``segment_news``)."""

    ended: bool  # a compaction continued it in a new segment (in this process or another)
    message_ids: list[int]  # its messages stored after the row the process had read
