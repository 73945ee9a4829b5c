"""The rows of ``sessions`` and ``messages``: their columns, JSON columns in and out, a row as its record,
and the one-row statements every kind of write shares (a session row, a message and its counters).

Every statement here runs on the connection a ``Database`` read or write hands its work.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from acp_hermes_memory import row_format
from acp_hermes_memory.session_db.errors import SessionNotFound
from acp_hermes_memory.session_db.records import MessageRecord, SessionRecord

log = logging.getLogger(__name__)

SESSION_COLUMNS = (
    "id",
    "source",
    "model",
    "model_config",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "updated_at",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
    "estimated_cost_usd",
    "cwd",
    "mode",
    "additional_directories",
    "title",
    "archived",
)
MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "active",
    "compacted",
    "payload",
    "display",
)
SESSION_SELECT = "SELECT " + ", ".join(SESSION_COLUMNS) + " FROM sessions"
MESSAGE_SELECT = "SELECT " + ", ".join(f"m.{name}" for name in MESSAGE_COLUMNS) + " FROM messages AS m"


def dump_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def load_json(text: str | None, default: Any = None) -> Any:
    if text is None:
        return default
    try:
        return orjson.loads(text)  # ~2.3x the standard library's speed: a 5,000-message load decodes 10,000 values
    except orjson.JSONDecodeError:
        pass
    try:  # what only the standard library reads back from its own output: lone surrogates, NaN
        return json.loads(text)
    except ValueError:
        log.warning("undecodable JSON column value ignored")
        return default


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    values = dict(zip(SESSION_COLUMNS, row, strict=True))
    values["model_config"] = load_json(values["model_config"], {})
    values["additional_directories"] = load_json(values["additional_directories"], [])
    values["archived"] = bool(values["archived"])
    return SessionRecord(**values)


def message_from_row(row: Sequence[Any]) -> MessageRecord:
    """Positional on purpose (rows come in MESSAGE_COLUMNS order): it runs once per message read."""
    (id_, session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) = row[:8]
    (token_count, finish_reason, reasoning, active, compacted, payload, display) = row[8:]
    return MessageRecord(
        id_,
        session_id,
        role,
        content,
        tool_call_id,
        load_json(tool_calls),
        tool_name,
        timestamp,
        token_count,
        finish_reason,
        reasoning,
        bool(active),
        bool(compacted),
        load_json(payload),
        row_format.upgrade(role, load_json(display)),
    )


def id_list(values: Iterable[Any]) -> str:
    """A JSON array for ``IN (SELECT value FROM json_each(?))``: one parameter, any length."""
    return json.dumps(list(values))


def fetch_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(f"{SESSION_SELECT} WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else session_from_row(row)


def require_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    record = fetch_session(conn, session_id)
    if record is None:
        raise SessionNotFound(session_id)
    return record


def insert_session(
    conn: sqlite3.Connection,
    *,
    session_id: str,
    source: str,
    model: str | None,
    mode: str | None,
    cwd: str | None,
    title: str | None,
    parent_session_id: str | None,
    now: float,
    additional_directories: list[str],
    model_config: dict[str, Any],
    system_prompt: str | None,
) -> None:
    conn.execute(
        "INSERT INTO sessions (id, source, model, mode, cwd, title, parent_session_id, started_at, "
        "updated_at, additional_directories, model_config, system_prompt) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            source,
            model,
            mode,
            cwd,
            title,
            parent_session_id,
            now,
            now,
            dump_json(additional_directories),
            dump_json(model_config or {}),
            system_prompt,
        ),
    )


INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, "
    "finish_reason, reasoning, payload, display) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_message(conn: sqlite3.Connection, session_id: str, tool_calls: int, when: float,
                   row: tuple[Any, ...]) -> int:
    """Store one message (``row``: the columns of ``INSERT_MESSAGE`` after ``session_id``, encoded) and
    count it on its session; its id."""
    bumped = conn.execute(
        "UPDATE sessions SET message_count = message_count + 1, "
        "tool_call_count = tool_call_count + ?, updated_at = max(updated_at, ?) WHERE id = ?",
        (tool_calls, when, session_id),
    )
    if bumped.rowcount == 0:
        raise SessionNotFound(session_id)
    return int(conn.execute(INSERT_MESSAGE, (session_id, *row)).lastrowid or 0)
