"""Cross-session recall: find past sessions about a topic and have a small model recap each one.

The pipeline behind the ``session_search`` tool, kept free of ACP and of the model provider so it
can be tested against a real SessionDB with a plain function as the summarizer:

1. an empty query lists the most recent sessions (database only, no model call);
2. otherwise the query is made safe for FTS5 (the trigram index for CJK text) and the best
   BM25 matches are fetched, leaving out the current session and its whole lineage (forks,
   parents, children: their content is already in front of the model);
3. hits are grouped by session and the top sessions kept (by relevance, newest or oldest);
4. each kept conversation is cut to a window of messages around its matches;
5. a summarizer writes a recap focused on the query for every session at once, a few calls in
   parallel under one overall deadline; a session whose recap fails or is late falls back to
   its raw match snippets, and the result says so.

Everything that ends up in the result (titles, summaries, snippets) feeds the main model's
prompt, so each piece goes through the injection scanner on its own. The ``excerpts`` are the
same matches written for people (``acp-hermes sessions search``, ``/search``): the message's own
words, its tool calls as one-liners ("ran terminal: make test"), the matched words as spans for
the caller to highlight. They never reach the model.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import anyio

from acp_hermes_memory.fts_query import is_cjk_query, sanitize_fts_query, trigram_query
from acp_hermes_memory.scan import guard_context_text
from acp_hermes_memory.session_db import SNIPPET_CLOSE, SNIPPET_OPEN
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes_memory.session_db import MessageRecord, SearchHit, SessionDB, SessionRecord

log = logging.getLogger(__name__)

SortOrder = Literal["relevance", "newest", "oldest"]
SORT_ORDERS: tuple[SortOrder, ...] = ("relevance", "newest", "oldest")
ALL_ROLES: tuple[str, ...] = ("user", "assistant", "tool")
# Tool output (file contents, command logs) matches almost anything and says little about what
# was decided, so searches look at what the user and the agent said unless asked otherwise.
DEFAULT_ROLES: tuple[str, ...] = ("user", "assistant")

DEFAULT_SESSIONS = 3
MAX_SESSIONS = 5
DEFAULT_RECENT = 5
MAX_RECENT = 10
HITS_PER_ROUND = 50  # FTS rows fetched per round before grouping them by session
MAX_ROUNDS = 3  # more rounds (excluding sessions found so far) when a few sessions hog the hits
ANCHORS_PER_SESSION = 5  # best matches of one session the window is built around
WINDOW_MESSAGES = 4  # messages kept either side of each anchor
MAX_CONVERSATION_CHARS = 16_000  # conversation text sent to the summarizer for one session
MAX_MESSAGE_CHARS = 2_000
MAX_TOOL_OUTPUT_CHARS = 600
MAX_SNIPPETS = 3
EXCERPT_CHARS = 160  # an excerpt's length for people, cut around its first match
DEFAULT_TIMEOUT = 30.0
DEFAULT_PARALLEL = 3
_GAP = "[…]"


@value
class SummaryRequest:
    """What a summarizer gets for one session: the topic and the conversation window."""

    query: str
    session_id: str
    title: str | None
    started_at: float
    conversation: str


Summarizer = Callable[[SummaryRequest], Awaitable[str]]


@value
class Excerpt:
    """A match as people read it: one line of the message (its tool calls as one-liners), cut
    around the match; ``marks`` are the ``(start, end)`` spans of the matched words in ``text``."""

    text: str
    marks: tuple[tuple[int, int], ...] = ()

    def render(self, open_mark: str, close_mark: str, escape: Callable[[str], str] | None = None) -> str:
        """``text`` with each matched word between ``open_mark`` and ``close_mark``; ``escape``
        (for Markdown, say) is applied to the text, never to the marks."""
        plain = escape or (lambda piece: piece)
        out: list[str] = []
        at = 0
        for start, end in self.marks:
            out += [plain(self.text[at:start]), open_mark, plain(self.text[start:end]), close_mark]
            at = end
        out.append(plain(self.text[at:]))
        return "".join(out)


@dataclass(frozen=True, slots=True)
class SessionRecall:
    """One past session in a recall result.

    ``window_ids`` and ``conversation`` are the cut the summarizer saw; ``snippets`` the raw
    match excerpts (scanned), shown when ``summary`` is None; ``summary_error`` says why it is.
    """

    session_id: str
    title: str | None
    cwd: str | None
    started_at: float
    updated_at: float
    message_count: int
    snippets: tuple[str, ...] = ()
    excerpts: tuple[Excerpt, ...] = ()  # the snippets' matches written for people (not scanned: never sent)
    window_ids: tuple[int, ...] = ()
    conversation: str = ""
    summary: str | None = None
    summary_error: str | None = None


@value
class RecallResult:
    """The sessions found (or listed) and the text the model reads."""

    query: str
    mode: Literal["recent", "search"]
    sessions: tuple[SessionRecall, ...]
    notice: str | None = None

    def text(self) -> str:
        if self.mode == "recent":
            return _recent_text(self)
        return _search_text(self)


async def recall(
    db: SessionDB,
    query: str | None,
    *,
    current_session: str | None,
    limit: int | None = None,
    role_filter: Sequence[str] | None = DEFAULT_ROLES,
    sort: SortOrder = "relevance",
    summarize: Summarizer | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_parallel: int = DEFAULT_PARALLEL,
    window: int = WINDOW_MESSAGES,
) -> RecallResult:
    """Recent sessions (empty query) or the past sessions best matching ``query``, recapped.

    ``limit`` is clamped (search: 1..MAX_SESSIONS, default 3; listing: 1..MAX_RECENT, default
    5). ``role_filter`` None searches every role. Raises ValueError for an unknown role or sort.
    """
    if sort not in SORT_ORDERS:
        raise ValueError(f"unknown sort {sort!r}; expected one of {', '.join(SORT_ORDERS)}")
    roles = _checked_roles(role_filter)
    text = (query or "").strip()
    if not text:
        count = _clamp(limit, DEFAULT_RECENT, MAX_RECENT)
        recent = await anyio.to_thread.run_sync(_recent_sessions, db, current_session, count)
        return RecallResult("", "recent", recent)
    count = _clamp(limit, DEFAULT_SESSIONS, MAX_SESSIONS)
    gather = functools.partial(_gather, db, text, current_session, count, roles, sort, window)
    found, notice = await anyio.to_thread.run_sync(gather)
    if found and summarize is not None:
        found = await _summarize_all(text, found, summarize, timeout, max_parallel)
    elif found:
        found = [dataclasses.replace(s, summary_error="no summarizer available") for s in found]
    return RecallResult(text, "search", tuple(found), notice)


def _clamp(value: int | None, default: int, most: int) -> int:
    return default if value is None else max(1, min(int(value), most))


def _checked_roles(role_filter: Sequence[str] | None) -> tuple[str, ...] | None:
    if role_filter is None:
        return None
    roles = tuple(dict.fromkeys(role.strip().lower() for role in role_filter if role.strip()))
    unknown = [role for role in roles if role not in ALL_ROLES]
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)}; expected some of {', '.join(ALL_ROLES)}")
    return roles or None


# --- database stage (synchronous, runs in a worker thread) ---------------------------------------


def _excluded(db: SessionDB, current_session: str | None) -> set[str]:
    return db.lineage(current_session) if current_session else set()


def _recent_sessions(db: SessionDB, current_session: str | None, count: int) -> tuple[SessionRecall, ...]:
    records = db.recent_sessions(limit=count, exclude=_excluded(db, current_session))
    return tuple(_from_record(record) for record in records)


def _from_record(record: SessionRecord) -> SessionRecall:
    """A found session; a subagent's or a rewind's branch is marked as such after its title
    (``Fix it (subagent of 1a2b3c4d)``, ``Fix it (rewound from 1a2b3c4d)``)."""
    title = _guarded_title(record.bare_title)
    if record.subagent_label is not None:
        title = f"{title or 'Untitled task'} ({record.subagent_label})"
    elif record.rewound_label is not None:
        title = f"{title or 'Untitled session'} ({record.rewound_label})"
    return SessionRecall(
        session_id=record.id,
        title=title,
        cwd=record.cwd,
        started_at=record.started_at,
        updated_at=record.updated_at,
        message_count=record.message_count,
    )


def _match_expression(db: SessionDB, query: str) -> tuple[str, bool]:
    """The MATCH expression and whether it is for the trigram index.

    CJK text goes to the trigram index when it can take it (runs of three or more characters);
    otherwise the word index is the best there is.
    """
    if is_cjk_query(query) and db.trigram_available:
        expression = trigram_query(query)
        if expression:
            return expression, True
    return sanitize_fts_query(query), False


def _gather(
    db: SessionDB,
    query: str,
    current_session: str | None,
    count: int,
    roles: tuple[str, ...] | None,
    sort: SortOrder,
    window: int,
) -> tuple[list[SessionRecall], str | None]:
    """Search, group, pick and cut: the sessions to summarize (no summaries yet) and a notice."""
    if not db.search_available:
        return [], "Full-text search is not available in this SQLite build, so past sessions cannot be searched."
    expression, trigram = _match_expression(db, query)
    if not expression:
        return [], "Nothing searchable is left in the query; use words that appeared in the conversation."
    excluded = _excluded(db, current_session)
    try:
        grouped = _grouped_hits(db, expression, trigram, roles, excluded, count)
    except sqlite3.OperationalError as error:  # the sanitizer should make this impossible
        log.warning("session search for %r failed: %s", query, error)
        return [], "The search index could not run this query; rephrase it with plain words."
    chosen = _order_sessions(grouped, sort)[:count]
    found = []
    for hits in chosen:
        record = db.get_session(hits[0].session_id)
        if record is None:  # deleted since the search
            continue
        anchors = [hit.message_id for hit in hits[:ANCHORS_PER_SESSION]]
        messages = db.messages_around(record.id, anchors, window)
        by_id = {message.id: message for message in messages}
        found.append(
            dataclasses.replace(
                _from_record(record),
                snippets=tuple(_guarded_snippet(record.id, hit.snippet) for hit in hits[:MAX_SNIPPETS]),
                excerpts=tuple(excerpt(by_id.get(hit.message_id), hit.snippet) for hit in hits[:MAX_SNIPPETS]),
                window_ids=tuple(message.id for message in messages),
                conversation=conversation_text(messages, set(anchors)),
            )
        )
    return found, None


def _grouped_hits(
    db: SessionDB,
    expression: str,
    trigram: bool,
    roles: tuple[str, ...] | None,
    excluded: set[str],
    count: int,
) -> list[list[SearchHit]]:
    """Hits grouped by session, sessions in order of their best hit.

    One long session can fill a whole page of hits; when that leaves fewer than ``count``
    sessions, the next round searches again without the sessions already found.
    """
    groups: dict[str, list[SearchHit]] = {}
    for _ in range(MAX_ROUNDS):
        hits = db.search_messages(
            expression,
            trigram=trigram,
            role_filter=roles,
            exclude_sessions=excluded | set(groups),
            limit=HITS_PER_ROUND,
        )
        for hit in hits:
            groups.setdefault(hit.session_id, []).append(hit)
        if len(groups) >= count or len(hits) < HITS_PER_ROUND:
            break
    return list(groups.values())


def _order_sessions(grouped: list[list[SearchHit]], sort: SortOrder) -> list[list[SearchHit]]:
    """Relevance keeps BM25 order; newest/oldest order sessions by when they matched."""
    if sort == "newest":
        return sorted(grouped, key=lambda hits: max(hit.timestamp for hit in hits), reverse=True)
    if sort == "oldest":
        return sorted(grouped, key=lambda hits: min(hit.timestamp for hit in hits))
    return grouped


def conversation_text(
    messages: Sequence[MessageRecord], anchors: set[int], budget: int = MAX_CONVERSATION_CHARS
) -> str:
    """The window as a compact transcript; over ``budget``, messages nearest the matches win.

    Dropped stretches are marked ``[…]`` so the reader knows the conversation goes on.
    """
    lines = [_message_line(message) for message in messages]
    if sum(len(line) + 2 for line in lines) <= budget:
        return "\n\n".join(lines)
    anchor_positions = [index for index, message in enumerate(messages) if message.id in anchors] or [0]

    def distance(index: int) -> int:
        return min(abs(index - anchor) for anchor in anchor_positions)

    kept: set[int] = set()
    used = 0
    for index in sorted(range(len(lines)), key=lambda i: (distance(i), i)):
        cost = len(lines[index]) + 2
        if used + cost > budget and kept:
            continue
        kept.add(index)
        used += cost
    out: list[str] = []
    for index, line in enumerate(lines):
        if index in kept:
            out.append(line)
        elif not out or out[-1] != _GAP:
            out.append(_GAP)
    return "\n\n".join(out)


def _message_line(message: MessageRecord) -> str:
    if message.role == "tool":
        name = message.tool_name or "tool"
        return f"TOOL RESULT ({name}): {_cut(message.content, MAX_TOOL_OUTPUT_CHARS)}"
    if message.role == "assistant":
        calls = [f"[called {call.get('name', '?')}]" for call in message.tool_calls or () if isinstance(call, dict)]
        body = " ".join(part for part in (message.content.strip(), *calls) if part)
        return f"ASSISTANT: {_cut(body, MAX_MESSAGE_CHARS)}"
    return f"{message.role.upper()}: {_cut(message.content, MAX_MESSAGE_CHARS)}"


def _cut(text: str, limit: int) -> str:
    """At most about ``limit`` characters, head and tail kept."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} {_GAP} {text[-(limit - head):]}"


# --- summaries --------------------------------------------------------------------------------


async def _summarize_all(
    query: str, sessions: list[SessionRecall], summarize: Summarizer, timeout: float, max_parallel: int
) -> list[SessionRecall]:
    """Every session's recap, at most ``max_parallel`` at a time, all within ``timeout`` seconds."""
    limiter = anyio.CapacityLimiter(max(1, max_parallel))
    outcomes: dict[int, str | BaseException] = {}

    async def one(index: int, session: SessionRecall) -> None:
        request = SummaryRequest(query, session.session_id, session.title, session.started_at, session.conversation)
        async with limiter:
            try:
                outcomes[index] = await summarize(request)
            except Exception as error:
                log.info("summary of session %s failed: %s", session.session_id, error)
                outcomes[index] = error

    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as group:
            for index, session in enumerate(sessions):
                group.start_soon(one, index, session)
    return [_with_outcome(session, outcomes.get(index), timeout) for index, session in enumerate(sessions)]


def _with_outcome(session: SessionRecall, outcome: str | BaseException | None, timeout: float) -> SessionRecall:
    if outcome is None:
        return dataclasses.replace(session, summary_error=f"timed out after {timeout:g} s")
    if isinstance(outcome, BaseException):
        return dataclasses.replace(session, summary_error=f"failed: {_describe(outcome)}")
    if not outcome.strip():
        return dataclasses.replace(session, summary_error="the summary came back empty")
    label = f"the summary of session {session.session_id}"
    return dataclasses.replace(session, summary=guard_context_text(label, outcome.strip()))


def _describe(error: BaseException) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message[:200]}" if message else type(error).__name__


# --- scanning and rendering -----------------------------------------------------------------------


def _guarded_title(title: str | None) -> str | None:
    if title is None:
        return None
    return guard_context_text("the session title", title)


def _guarded_snippet(session_id: str, snippet: str) -> str:
    flat = " ".join(snippet.split())
    return guard_context_text(f"a snippet of session {session_id}", flat)


# --- excerpts for people ---------------------------------------------------------------------------

_MARKED = re.compile(re.escape(SNIPPET_OPEN) + "(.*?)" + re.escape(SNIPPET_CLOSE), re.S)
# The argument that says what a call did, by the names the tools use, most telling first.
_MAIN_ARGUMENTS = ("command", "path", "pattern", "query", "question", "url", "name", "action")
_ARGUMENT_CHARS = 80


def excerpt(message: MessageRecord | None, snippet: str) -> Excerpt:
    """The match ``snippet`` (FTS5's, its matches between SNIPPET_OPEN/SNIPPET_CLOSE) found,
    written for people from ``message``: its words on one line, each tool call as
    ``ran <tool>: <what>``, cut to about EXCERPT_CHARS around the first matched word."""
    terms = sorted({" ".join(term.split()) for term in _MARKED.findall(snippet)} - {""}, key=len, reverse=True)
    if message is not None:
        text = readable_message(message, terms)
        marks = _spans(text, terms)
        if marks or not terms:
            return _cut_around(text, marks)
    return _from_snippet(snippet)


def readable_message(message: MessageRecord, terms: Sequence[str] = ()) -> str:
    """A stored message on one line: what was said, then its tool calls as one-liners; ``terms``
    (matched words) bring in the argument of a call that holds them when its one-liner does not."""
    said = " ".join(message.content.split())
    if message.role == "tool":
        return f"output of {message.tool_name or 'a tool'}: {said}"
    calls = [_call_line(call, terms) for call in message.tool_calls or () if isinstance(call, dict)]
    return " · ".join(part for part in (said, *calls) if part)


def _call_line(call: dict[str, Any], terms: Sequence[str]) -> str:
    name = str(call.get("name") or "a tool")
    arguments = call.get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    main = next((key for key in _MAIN_ARGUMENTS if isinstance(arguments.get(key), str) and arguments[key].strip()),
                None)
    line = f"ran {name}: {_short(arguments[main], _ARGUMENT_CHARS)}" if main else f"ran {name}"
    for key, argument in arguments.items():
        if key == main or _spans(line, terms):
            continue
        text = argument if isinstance(argument, str) else json.dumps(argument, ensure_ascii=False)
        found = _spans(" ".join(text.split()), terms)
        if found:
            line += f" ({key}: {_cut_around(' '.join(text.split()), found, _ARGUMENT_CHARS).text})"
    return line


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _spans(text: str, terms: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """Where the matched words are in ``text`` (case-insensitive; whole words unless CJK)."""
    if not terms:
        return ()
    patterns = [re.escape(term) if is_cjk_query(term) else rf"(?<!\w){re.escape(term)}(?!\w)" for term in terms]
    return tuple(match.span() for match in re.finditer("|".join(patterns), text, re.I) if match.end() > match.start())


def _cut_around(text: str, marks: Sequence[tuple[int, int]], limit: int = EXCERPT_CHARS) -> Excerpt:
    """About ``limit`` characters of ``text`` from a little before the first mark, at word boundaries."""
    if len(text) <= limit:
        return Excerpt(text, tuple(marks))
    first_start, first_end = marks[0] if marks else (0, 0)
    start = max(0, first_start - limit // 3)
    if start:
        space = text.rfind(" ", 0, start)
        if space >= 0 and first_start - space <= limit // 2:
            start = space + 1
    end = min(len(text), start + limit)
    if end < len(text):
        space = text.rfind(" ", first_end, end)
        if space > first_end:
            end = space
    lead = "…" if start else ""
    tail = "…" if end < len(text) else ""
    kept = tuple((a - start + len(lead), b - start + len(lead)) for a, b in marks if a >= start and b <= end)
    return Excerpt(f"{lead}{text[start:end]}{tail}", kept)


def _from_snippet(snippet: str) -> Excerpt:
    """FTS5's snippet itself, the markers taken out (when the message could not be read back)."""
    text, marks, at = "", [], 0
    flat = " ".join(snippet.split())
    for match in _MARKED.finditer(flat):
        text += flat[at:match.start()]
        marks.append((len(text), len(text) + len(match.group(1))))
        text += match.group(1)
        at = match.end()
    return Excerpt(text + flat[at:], tuple(marks))


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _heading(session: SessionRecall) -> str:
    parts = [_when(session.updated_at)]
    if session.cwd:
        parts.append(session.cwd)
    parts.append(f"{session.message_count} messages")
    parts.append(f"session {session.session_id}")
    return f"{session.title or 'Untitled session'} — {' · '.join(parts)}"


def _recent_text(result: RecallResult) -> str:
    if not result.sessions:
        return "No past sessions yet (the current session is not listed)."
    lines = [f"{len(result.sessions)} most recent past sessions (newest first; the current session is not listed):"]
    lines += [f"{number}. {_heading(session)}" for number, session in enumerate(result.sessions, 1)]
    lines.append("Search one with session_search(query=...) using words from it to recall what happened.")
    return "\n".join(lines)


def _search_text(result: RecallResult) -> str:
    if result.notice:
        return result.notice
    if not result.sessions:
        return (
            f'No past sessions match "{result.query}" (the current session and its forks are left out). '
            "Try other words, fewer words, or OR between alternatives."
        )
    count = len(result.sessions)
    noun = "session" if count == 1 else "sessions"
    blocks = [f'{count} past {noun} matching "{result.query}" (the current session and its forks are left out):']
    for number, session in enumerate(result.sessions, 1):
        lines = [f"## {number}. {_heading(session)}"]
        if session.summary is not None:
            lines.append(session.summary)
        else:
            lines.append(f"(No summary: {session.summary_error}. Matching excerpts:)")
            lines += [f"- {snippet}" for snippet in session.snippets]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
