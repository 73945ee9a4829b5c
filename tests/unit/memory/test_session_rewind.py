"""SessionDB.rewind on a real SQLite file: the later messages of a segment set aside as an ended branch
that search and recall still find, that listings leave out and that goes when its session is deleted."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_memory.recall import recall
from acp_hermes_memory.session_db import (
    CONTINUATION_SOURCE,
    REWOUND_SOURCE,
    SessionDB,
    SessionNotFound,
)


def new_session(db: SessionDB, session_id: str, **overrides: Any) -> None:
    settings: dict[str, Any] = {
        "cwd": "/work/app",
        "model": "claude-test",
        "mode": "default",
        "model_config": {"thought_level": "low"},
        "system_prompt": "You are Hermes.",
        "additional_directories": ["/work/lib"],
        "title": "Fix the parser",
    }
    settings.update(overrides)
    db.create_session(session_id, **settings)


def turn(db: SessionDB, session_id: str, prompt: str, answer: str, *, at: float) -> list[int]:
    """One turn: the prompt, a tool call and its result, the answer; returns the four message ids."""
    call = [{"id": f"call-{at}", "name": "read_file", "arguments": '{"path": "parser.py"}'}]
    return [
        db.append_message(session_id, "user", prompt, timestamp=at),
        db.append_message(session_id, "assistant", "", tool_calls=call, timestamp=at + 1),
        db.append_message(session_id, "tool", "def parse(): ...", tool_call_id=f"call-{at}",
                          tool_name="read_file", timestamp=at + 2),
        db.append_message(session_id, "assistant", answer, timestamp=at + 3),
    ]


def indexes_consistent(path: Path) -> None:
    """FTS5 checks each index against the messages it was built from (raises if they differ)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def hit_sessions(db: SessionDB, match: str, *, trigram: bool = False) -> set[str]:
    return {hit.session_id for hit in db.search_messages(match, trigram=trigram)}


def test_the_later_messages_move_to_an_ended_branch_with_the_counters_right(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    kept = turn(db, "s1", "Parse the header first.", "The header parses now.", at=1000.0)
    moved = turn(db, "s1", "Now rewrite the tokenizer.", "Rewrote the tokenizer.", at=2000.0)

    branch = db.rewind("s1", moved[0])

    assert branch is not None
    assert [row.id for row in db.messages("s1")] == kept
    rows = db.messages(branch)
    assert [row.id for row in rows] == moved and [row.session_id for row in rows] == [branch] * 4
    assert rows[0].content == "Now rewrite the tokenizer." and rows[1].tool_calls is not None
    origin, record = db.get_session("s1"), db.get_session(branch)
    assert origin is not None and record is not None
    assert (origin.message_count, origin.tool_call_count, origin.ended_at) == (4, 1, None)
    assert (record.source, record.parent_session_id, record.end_reason) == (REWOUND_SOURCE, "s1", "rewound")
    assert (record.message_count, record.tool_call_count) == (4, 1)
    assert record.ended_at is not None and record.ended_at >= time.time() - 60
    assert (record.started_at, record.updated_at) == (2000.0, 2003.0)  # when the moved messages were written
    assert (record.cwd, record.model, record.mode) == ("/work/app", "claude-test", "default")
    assert (record.model_config, record.system_prompt) == ({"thought_level": "low"}, "You are Hermes.")
    assert record.additional_directories == ["/work/lib"]
    assert record.title == "Fix the parser (rewound)"
    assert (record.label, record.bare_title) == ("rewound from s1", "Fix the parser")
    assert (origin.label, origin.bare_title) == (None, "Fix the parser")
    indexes_consistent(db_path)


def test_an_untitled_session_gives_an_untitled_branch(db: SessionDB) -> None:
    new_session(db, "s1", title=None)
    ids = turn(db, "s1", "Parse the header.", "Done.", at=1000.0)
    branch = db.rewind("s1", ids[2])
    record, origin = db.get_session(branch or ""), db.get_session("s1")
    assert record is not None and (record.title, record.bare_title, record.message_count) == (None, None, 2)
    assert origin is not None and (record.tool_call_count, origin.tool_call_count) == (0, 1)


def test_nothing_to_move_changes_nothing(db: SessionDB) -> None:
    new_session(db, "s1")
    ids = turn(db, "s1", "Parse the header.", "Done.", at=1000.0)
    new_session(db, "other")
    later = turn(db, "other", "Something else.", "Sure.", at=2000.0)

    assert db.rewind("s1", later[0]) is None  # later ids exist, but not in this segment
    assert db.rewind("s1", ids[-1] + 1_000) is None
    assert [row.id for row in db.messages("s1")] == ids and [row.id for row in db.messages("other")] == later
    assert {record.id for record in db.list_sessions(include_empty=True)[0]} == {"s1", "other"}
    with sqlite3.connect(db.path) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    with pytest.raises(SessionNotFound):
        db.rewind("missing", 1)


def test_search_finds_the_moved_messages_under_the_branch_only(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    turn(db, "s1", "Parse the header first.", "The header parses now.", at=1000.0)
    moved = turn(db, "s1", "Rewrite the tokenizer, 分词器 too.", "Rewrote the tokenizer.", at=2000.0)
    assert hit_sessions(db, "tokenizer") == {"s1"}

    branch = db.rewind("s1", moved[0])

    assert hit_sessions(db, "tokenizer") == {branch}
    assert hit_sessions(db, "read_file") == {"s1", branch}  # tool names and calls stay indexed on both sides
    assert hit_sessions(db, "header") == {"s1"}
    if db.trigram_available:
        assert hit_sessions(db, '"分词器"', trigram=True) == {branch}
    hits = db.search_messages("tokenizer")
    assert {hit.message_id for hit in hits} == {moved[0], moved[3]}
    assert {hit.session_title for hit in hits} == {"Fix the parser (rewound)"}
    indexes_consistent(db_path)


@pytest.mark.anyio
async def test_recall_from_the_same_session_finds_the_branch_and_marks_it(db: SessionDB) -> None:
    new_session(db, "s1")
    turn(db, "s1", "Parse the header first.", "The header parses now.", at=1000.0)
    moved = turn(db, "s1", "Rewrite the tokenizer.", "Rewrote the tokenizer.", at=2000.0)
    branch = db.rewind("s1", moved[0])
    assert branch is not None

    assert db.lineage("s1") == {"s1"}
    found = await recall(db, "tokenizer", current_session="s1")
    assert [s.session_id for s in found.sessions] == [branch]
    assert found.sessions[0].title == "Fix the parser (rewound from s1)"
    assert "Rewrite the tokenizer" in found.sessions[0].conversation
    assert (await recall(db, "header", current_session="s1")).sessions == ()  # still in the session's own context


def test_listings_leave_the_branch_out(db: SessionDB) -> None:
    new_session(db, "s1")
    moved = turn(db, "s1", "Rewrite the tokenizer.", "Rewrote it.", at=1000.0)
    branch = db.rewind("s1", moved[2])
    assert branch is not None

    for include_subagents in (False, True):
        listed, _ = db.list_sessions(include_empty=True, include_subagents=include_subagents)
        assert [record.id for record in listed] == ["s1"]
    assert [record.id for record in db.recent_sessions()] == ["s1"]
    assert [record.id for record in db.segments("s1")] == ["s1"]
    assert [row.id for row in db.conversation("s1")] == moved[:2]


def test_deleting_the_session_deletes_its_branches(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    first = turn(db, "s1", "Rewrite the tokenizer.", "Rewrote it.", at=1000.0)
    one = db.rewind("s1", first[0])
    second = turn(db, "s1", "Rewrite the lexer.", "Rewrote it.", at=2000.0)
    two = db.rewind("s1", second[2])
    new_session(db, "other")
    turn(db, "other", "Rewrite the lexer elsewhere.", "Done.", at=3000.0)
    assert one is not None and two is not None and one != two

    assert db.delete_session("s1")

    assert db.get_session(one) is None and db.get_session(two) is None
    assert db.messages(one) == [] and db.messages(two) == [] and db.messages("s1") == []
    assert hit_sessions(db, "tokenizer") == set() and hit_sessions(db, "lexer") == {"other"}
    indexes_consistent(db_path)


def test_a_fork_of_a_branch_is_a_conversation_of_its_own(db: SessionDB) -> None:
    new_session(db, "s1")
    moved = turn(db, "s1", "Rewrite the tokenizer.", "Rewrote it.", at=1000.0)
    branch = db.rewind("s1", moved[0])
    assert branch is not None

    fork = db.fork_session(branch, "fork", cwd="/work/app")

    assert (fork.source, fork.label, len(db.messages("fork"))) == ("acp", None, 4)


def test_a_rewind_after_compaction_works_on_the_current_segment(db: SessionDB) -> None:
    new_session(db, "root")
    before = turn(db, "root", "Parse the header first.", "The header parses now.", at=1000.0)
    new_session(db, "seg2", parent_session_id="root", source=CONTINUATION_SOURCE, title=None)
    db.update_session("root", end_reason=CONTINUATION_SOURCE, ended_at=1500.0)
    kept = turn(db, "seg2", "Now the body.", "The body parses.", at=2000.0)
    moved = turn(db, "seg2", "Rewrite the tokenizer.", "Rewrote it.", at=3000.0)

    branch = db.rewind("seg2", moved[0])

    assert branch is not None
    assert [record.id for record in db.segments("root")] == ["root", "seg2"]
    assert [row.id for row in db.conversation("root")] == before + kept
    record = db.get_session(branch)
    assert record is not None and (record.parent_session_id, record.title) == ("seg2", None)
    assert record.label == "rewound from seg2"
    assert db.lineage("root") == {"root", "seg2"} and branch not in db.lineage("seg2")
    assert hit_sessions(db, "tokenizer") == {branch}
    assert [r.id for r in db.list_sessions(include_empty=True)[0]] == ["root"]

    for segment in db.segments("root"):  # how the session is deleted: each of its segments
        db.delete_session(segment.id)
    assert db.get_session(branch) is None and hit_sessions(db, "tokenizer") == set()
