"""SessionDB on real SQLite files: the API, full-text search, migrations, several processes, crashes."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_memory.fts_query import CJK_GLOB, is_cjk_char, sanitize_fts_query, trigram_query
from acp_hermes_memory.session_db import (
    SNIPPET_CLOSE,
    SNIPPET_OPEN,
    NewMessage,
    SessionDB,
    SessionExists,
    SessionNotFound,
    SubagentTotals,
)
from acp_hermes_memory.session_db.search import RANK_WINDOW
from acp_hermes_memory.session_schema import SCHEMA_VERSION, SearchSupport
from tests.support import REPO_ROOT


def new_session(db: SessionDB, session_id: str, cwd: str = "/work/app", **overrides: Any) -> None:
    settings: dict[str, Any] = {
        "cwd": cwd,
        "model": "claude-test",
        "mode": "default",
        "model_config": {"thought_level": "low"},
        "system_prompt": "You are Hermes.",
    }
    settings.update(overrides)
    db.create_session(session_id, **settings)


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection for looking at what SessionDB wrote."""
    return sqlite3.connect(path, isolation_level=None)


def assert_indexes_consistent(path: Path) -> None:
    """FTS5 checks each index against the messages it was built from (raises if they differ)."""
    conn = raw(path)
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


# --- sessions -------------------------------------------------------------------------------------


def test_create_and_get_round_trip_every_field(db: SessionDB) -> None:
    created = db.create_session(
        "s1",
        cwd="/work/app",
        model="claude-test",
        mode="plan",
        model_config={"thought_level": "high"},
        system_prompt="frozen prompt",
        additional_directories=["/work/lib", "/work/docs"],
        title="First",
    )

    fetched = db.get_session("s1")

    assert fetched == created
    assert fetched.source == "acp"
    assert fetched.model_config == {"thought_level": "high"}
    assert fetched.additional_directories == ["/work/lib", "/work/docs"]
    assert (fetched.mode, fetched.title, fetched.system_prompt) == ("plan", "First", "frozen prompt")
    assert fetched.message_count == 0 and fetched.archived is False
    assert fetched.started_at == fetched.updated_at
    assert db.get_session("missing") is None


def test_stored_json_reads_back_whatever_the_standard_library_wrote(db: SessionDB, db_path: Path) -> None:
    """Values are read with orjson, which refuses the Infinity and NaN that json.dumps writes: those rows
    still come back, and a value that is no JSON at all is dropped with the rest of the row kept."""
    new_session(db, "s")
    odd = {"score": float("inf"), "low": float("-inf"), "plain": "ünïcode ✓"}
    db.append_message("s", "tool", "out", tool_call_id="t1", payload={"ok": True}, display=odd)
    db.append_message("s", "assistant", "broken", display={"x": 1})
    with raw(db_path) as conn:
        conn.execute("UPDATE messages SET display = '{not json' WHERE content = 'broken'")
    first, second = db.messages("s")
    assert first.display == odd and first.payload == {"ok": True}
    assert second.content == "broken" and second.display is None


def test_create_rejects_duplicates_and_unknown_parents(db: SessionDB) -> None:
    new_session(db, "s1")

    with pytest.raises(SessionExists):
        new_session(db, "s1")
    with pytest.raises(SessionNotFound):
        new_session(db, "s2", parent_session_id="nope")
    assert db.get_session("s2") is None


def test_update_session_sets_fields_and_rejects_unknown_ones(db: SessionDB) -> None:
    new_session(db, "s1")
    before = db.get_session("s1")

    db.update_session(
        "s1",
        title="Renamed",
        mode="accept-edits",
        model="claude-other",
        model_config={"thought_level": "off"},
        system_prompt="rebuilt prompt",
        ended_at=123.5,
        end_reason="compression",
        archived=True,
        additional_directories=("/extra",),
        cwd="/elsewhere",
    )
    after = db.get_session("s1")

    assert after is not None and before is not None
    assert (after.title, after.mode, after.model) == ("Renamed", "accept-edits", "claude-other")
    assert after.cwd == "/elsewhere"
    assert after.model_config == {"thought_level": "off"}
    assert after.system_prompt == "rebuilt prompt"
    assert (after.ended_at, after.end_reason, after.archived) == (123.5, "compression", True)
    assert after.additional_directories == ["/extra"]
    assert after.updated_at == before.updated_at
    with pytest.raises(ValueError, match="message_count"):
        db.update_session("s1", message_count=5)
    with pytest.raises(SessionNotFound):
        db.update_session("missing", title="x")


def test_add_usage_increments_counters(db: SessionDB) -> None:
    new_session(db, "s1")

    db.add_usage("s1", input_tokens=100, output_tokens=20, cache_read_tokens=5, cost_usd=0.25, api_calls=1)
    db.add_usage(
        "s1",
        input_tokens=50,
        output_tokens=10,
        cache_write_tokens=7,
        reasoning_tokens=3,
        cost_usd=0.5,
        api_calls=2,
    )
    record = db.get_session("s1")

    assert record is not None
    assert (record.input_tokens, record.output_tokens) == (150, 30)
    assert (record.cache_read_tokens, record.cache_write_tokens, record.reasoning_tokens) == (5, 7, 3)
    assert record.estimated_cost_usd == pytest.approx(0.75)
    assert record.api_call_count == 3
    with pytest.raises(SessionNotFound):
        db.add_usage("missing", input_tokens=1)


def test_meta_values_round_trip(db: SessionDB) -> None:
    assert db.get_meta("k") is None
    db.set_meta("k", "one")
    db.set_meta("k", "two")
    assert db.get_meta("k") == "two"


# --- messages -------------------------------------------------------------------------------------


def test_append_message_keeps_order_and_bumps_the_session(db: SessionDB) -> None:
    new_session(db, "s1")
    calls = [
        {"id": "t1", "name": "read_file", "arguments": {"path": "a.py"}},
        {"id": "t2", "name": "terminal", "arguments": {"command": "ls"}},
    ]

    first = db.append_message("s1", "user", "read both", payload=[{"type": "text", "text": "read both"}])
    second = db.append_message(
        "s1", "assistant", "reading", tool_calls=calls, finish_reason="tool_use", reasoning="think", token_count=9
    )
    third = db.append_message(
        "s1", "tool", "contents", tool_call_id="t1", tool_name="read_file", display={"kind": "text", "text": "c"}
    )
    messages = db.messages("s1")
    session = db.get_session("s1")

    assert first < second < third
    assert [m.id for m in messages] == [first, second, third]
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[0].payload == [{"type": "text", "text": "read both"}]
    assert messages[1].tool_calls == calls
    assert (messages[1].finish_reason, messages[1].reasoning, messages[1].token_count) == ("tool_use", "think", 9)
    assert (messages[2].tool_call_id, messages[2].tool_name) == ("t1", "read_file")
    assert messages[2].display == {"kind": "text", "text": "c"}
    assert all(m.active and not m.compacted for m in messages)
    assert session is not None
    assert (session.message_count, session.tool_call_count) == (3, 2)
    assert session.updated_at == max(m.timestamp for m in messages)


def test_append_message_rejects_bad_roles_and_unknown_sessions(db: SessionDB) -> None:
    new_session(db, "s1")

    with pytest.raises(ValueError, match="role"):
        db.append_message("s1", "system", "nope")
    with pytest.raises(SessionNotFound):
        db.append_message("missing", "user", "nope")
    assert db.messages("s1") == []
    assert db.messages("missing") == []


def test_append_message_never_moves_activity_back_in_time(db: SessionDB) -> None:
    new_session(db, "s1")
    db.append_message("s1", "user", "later", timestamp=time.time() + 100)
    newest = db.get_session("s1")

    db.append_message("s1", "user", "imported older message", timestamp=1.0)

    after = db.get_session("s1")
    assert newest is not None and after is not None
    assert after.updated_at == newest.updated_at
    assert after.message_count == 2


def test_messages_active_only_hides_rewound_rows(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    kept = db.append_message("s1", "user", "kept")
    rewound = db.append_message("s1", "assistant", "rewound")
    conn = raw(db_path)
    conn.execute("UPDATE messages SET active = 0 WHERE id = ?", (rewound,))
    conn.close()

    assert [m.id for m in db.messages("s1")] == [kept]
    assert [m.id for m in db.messages("s1", active_only=False)] == [kept, rewound]


def test_messages_around_returns_the_window_around_each_hit(db: SessionDB) -> None:
    new_session(db, "s1")
    new_session(db, "other")
    ids = []
    for index in range(12):
        ids.append(db.append_message("s1", "user", f"message {index}"))
        db.append_message("other", "user", "interleaved")  # ids of s1 are not contiguous

    around = db.messages_around("s1", [ids[2], ids[9]], window=1)
    whole = db.messages_around("s1", [ids[0]], window=50)

    assert [m.content for m in around] == [f"message {i}" for i in (1, 2, 3, 8, 9, 10)]
    assert [m.id for m in whole] == ids
    assert db.messages_around("s1", [], window=3) == []


# --- listing --------------------------------------------------------------------------------------


def test_list_sessions_newest_activity_first_with_id_tie_break(db: SessionDB) -> None:
    base = time.time() + 1_000
    for session_id, offset in (("a", 1), ("b", 3), ("c", 2), ("d", 3)):
        new_session(db, session_id)
        db.append_message(session_id, "user", "hi", timestamp=base + offset)

    sessions, cursor = db.list_sessions()

    assert [s.id for s in sessions] == ["d", "b", "c", "a"]
    assert cursor is None


def test_list_sessions_filters_by_exact_cwd_and_hides_empty_sessions(db: SessionDB) -> None:
    for session_id, cwd in (("a", "/work/app"), ("b", "/work/app/sub"), ("c", "/work/app")):
        new_session(db, session_id, cwd=cwd)
        db.append_message(session_id, "user", "hi")
    new_session(db, "empty", cwd="/work/app")

    in_app, _ = db.list_sessions(cwd="/work/app")
    with_empty, _ = db.list_sessions(cwd="/work/app", include_empty=True)
    everything, _ = db.list_sessions()

    assert {s.id for s in in_app} == {"a", "c"}
    assert {s.id for s in with_empty} == {"a", "c", "empty"}
    assert {s.id for s in everything} == {"a", "b", "c"}


def test_list_sessions_cursor_pages_without_duplicates_or_gaps(db: SessionDB) -> None:
    base = time.time() + 1_000
    for index in range(23):
        new_session(db, f"s{index:02d}")
        db.append_message(f"s{index:02d}", "user", "hi", timestamp=base + index // 3)  # many ties
    expected = [s.id for s in db.list_sessions(limit=100)[0]]

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = db.list_sessions(limit=5, cursor=cursor)
        seen.extend(s.id for s in page)
        pages += 1
        if cursor is None:
            break

    assert pages == 5
    assert seen == expected
    assert len(set(seen)) == 23
    with pytest.raises(ValueError, match="cursor"):
        db.list_sessions(cursor="not-a-cursor")


def test_recent_sessions_skip_excluded_and_empty_ones(db: SessionDB) -> None:
    base = time.time() + 1_000
    for index, session_id in enumerate(("a", "b", "c")):
        new_session(db, session_id)
        db.append_message(session_id, "user", "hi", timestamp=base + index)
    new_session(db, "empty")

    assert [s.id for s in db.recent_sessions(limit=10)] == ["c", "b", "a"]
    assert [s.id for s in db.recent_sessions(limit=10, exclude={"c"})] == ["b", "a"]
    assert [s.id for s in db.recent_sessions(limit=1)] == ["c"]


# --- delete, fork, lineage --------------------------------------------------------------------------


def test_delete_session_removes_messages_and_index_rows(db: SessionDB, db_path: Path) -> None:
    new_session(db, "parent")
    new_session(db, "child", parent_session_id="parent")
    db.append_message("parent", "user", "unicorn 独角兽数据 message")
    db.append_message("child", "user", "kept message")
    assert db.search_messages("unicorn")
    assert db.search_messages(trigram_query("独角兽"), trigram=True)

    assert db.delete_session("parent") is True
    assert db.delete_session("parent") is False

    assert db.get_session("parent") is None
    assert db.messages("parent") == []
    assert db.search_messages("unicorn") == []
    assert db.search_messages(trigram_query("独角兽"), trigram=True) == []
    conn = raw(db_path)
    assert conn.execute("SELECT count(*) FROM messages WHERE session_id = 'parent'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'unicorn'").fetchone() == (0,)
    conn.close()
    child = db.get_session("child")
    assert child is not None and child.parent_session_id is None
    assert [m.content for m in db.messages("child")] == ["kept message"]
    assert_indexes_consistent(db_path)


def test_fork_copies_active_history_and_records_lineage(db: SessionDB, db_path: Path) -> None:
    new_session(db, "src", mode="plan", additional_directories=["/lib"], title="Source")
    calls = [{"id": "t1", "name": "grep", "arguments": {"pattern": "zebra"}}]
    db.append_message("src", "user", "find the zebra", payload=[{"type": "text", "text": "find the zebra"}])
    db.append_message("src", "assistant", "searching", tool_calls=calls, display={"shown": True})
    rewound = db.append_message("src", "assistant", "rewound answer")
    db.append_message("src", "tool", "zebra.py:1", tool_call_id="t1", tool_name="grep")
    conn = raw(db_path)
    conn.execute("UPDATE messages SET active = 0 WHERE id = ?", (rewound,))
    conn.close()

    fork = db.fork_session("src", "fork", cwd="/work/fork", model="claude-other")
    source_messages = db.messages("src")
    fork_messages = db.messages("fork")

    assert fork.parent_session_id == "src"
    assert (fork.cwd, fork.model) == ("/work/fork", "claude-other")
    assert (fork.mode, fork.system_prompt, fork.model_config) == ("plan", "You are Hermes.", {"thought_level": "low"})
    assert fork.additional_directories == ["/lib"]
    assert fork.title is None
    assert (fork.message_count, fork.tool_call_count) == (3, 1)
    assert [(m.role, m.content, m.tool_calls, m.payload, m.display, m.tool_name) for m in fork_messages] == [
        (m.role, m.content, m.tool_calls, m.payload, m.display, m.tool_name) for m in source_messages
    ]
    assert not {m.id for m in fork_messages} & {m.id for m in source_messages}
    assert [m.id for m in fork_messages] == sorted(m.id for m in fork_messages)
    assert {hit.session_id for hit in db.search_messages("zebra")} == {"src", "fork"}
    assert len(db.messages("src", active_only=False)) == 4
    with pytest.raises(SessionNotFound):
        db.fork_session("missing", "fork2", cwd="/x")
    with pytest.raises(SessionExists):
        db.fork_session("src", "fork", cwd="/x")
    assert_indexes_consistent(db_path)


def test_lineage_is_ancestors_and_descendants(db: SessionDB) -> None:
    new_session(db, "root")
    new_session(db, "child", parent_session_id="root")
    new_session(db, "grandchild", parent_session_id="child")
    new_session(db, "sibling", parent_session_id="root")
    new_session(db, "stranger")

    assert db.lineage("child") == {"root", "child", "grandchild"}
    assert db.lineage("root") == {"root", "child", "grandchild", "sibling"}
    assert db.lineage("sibling") == {"root", "sibling"}
    assert db.lineage("stranger") == {"stranger"}


# --- subagents --------------------------------------------------------------------------------------


def delegation_tree(db: SessionDB) -> None:
    """root ─ child-a (subagent) ─ grandchild (subagent); root ─ child-b (subagent), continued by
    child-b2 (compression); root ─ fork (acp) ─ fork-child (subagent); root ─ root2 (compression) ─
    child-c (subagent)."""
    new_session(db, "root", title="Refactor the parser")
    for session_id, parent, source in (
        ("child-a", "root", "subagent"),
        ("grandchild", "child-a", "subagent"),
        ("child-b", "root", "subagent"),
        ("child-b2", "child-b", "compression"),
        ("fork", "root", "acp"),
        ("fork-child", "fork", "subagent"),
        ("root2", "root", "compression"),
        ("child-c", "root2", "subagent"),
    ):
        new_session(db, session_id, parent_session_id=parent, source=source, title=f"task {session_id}")
        db.append_message(session_id, "user", f"work of {session_id}")
    db.append_message("root", "user", "split the parser work")
    usage = {"child-a": (1.0, 100, 10), "grandchild": (0.5, 50, 5), "child-b": (0.25, 20, 2),
             "child-b2": (0.125, 8, 1), "fork": (8.0, 800, 80), "fork-child": (4.0, 400, 40),
             "root": (2.0, 200, 20), "root2": (16.0, 1600, 160), "child-c": (0.0625, 4, 3)}
    for session_id, (cost, tokens_in, tokens_out) in usage.items():
        db.add_usage(session_id, cost_usd=cost, input_tokens=tokens_in, output_tokens=tokens_out)


def test_session_lists_leave_subagent_sessions_out_unless_asked(db: SessionDB) -> None:
    delegation_tree(db)

    listed = {s.id for s in db.list_sessions()[0]}
    with_subagents = {s.id for s in db.list_sessions(include_subagents=True)[0]}
    assert listed == {"root", "fork"}  # continuations are never listed
    assert with_subagents == {"root", "fork", "child-a", "grandchild", "child-b", "fork-child", "child-c"}
    assert {s.id for s in db.recent_sessions(limit=20)} & with_subagents == {"root", "fork"}


def test_subagents_of_are_direct_subagent_children_oldest_first(db: SessionDB) -> None:
    delegation_tree(db)

    assert [s.id for s in db.subagents_of("root")] == ["child-a", "child-b"]
    assert [s.id for s in db.subagents_of("child-a")] == ["grandchild"]
    assert db.subagents_of("grandchild") == [] and db.subagents_of("missing") == []


def test_subagent_totals_add_up_every_subagent_below_the_session(db: SessionDB) -> None:
    delegation_tree(db)

    # child-a, grandchild, child-b (with its continuation) and child-c (delegated after a compaction);
    # not the fork's subagent, nor the session's own rows.
    assert db.subagent_totals("root") == SubagentTotals(
        sessions=4, cost_usd=1.0 + 0.5 + 0.25 + 0.125 + 0.0625, input_tokens=182, output_tokens=21
    )
    assert db.subagent_totals("child-a") == SubagentTotals(1, 0.5, 50, 5)
    assert db.subagent_totals("fork") == SubagentTotals(1, 4.0, 400, 40)
    assert db.subagent_totals("grandchild") == db.subagent_totals("missing") == SubagentTotals(0, 0.0, 0, 0)
    assert sorted(db.subagent_ids("root")) == ["child-a", "child-b", "child-b2", "child-c", "grandchild"]


def test_lineage_stops_at_subagent_links_and_search_finds_subagent_messages(db: SessionDB) -> None:
    delegation_tree(db)

    assert db.lineage("root") == {"root", "root2", "fork"}
    assert db.lineage("child-a") == {"child-a"}
    assert db.lineage("child-b") == {"child-b", "child-b2"}
    hits = db.search_messages("work", exclude_sessions=db.lineage("root"), limit=50)
    assert {hit.session_id for hit in hits} == {"child-a", "grandchild", "child-b", "child-b2", "fork-child",
                                                "child-c"}


def test_subagent_label_and_a_fork_of_a_subagent_session(db: SessionDB) -> None:
    delegation_tree(db)
    child = db.get_session("child-a")
    root = db.get_session("root")
    assert child is not None and root is not None
    assert (child.source, child.subagent_label, root.subagent_label) == ("subagent", "subagent of root", None)

    fork = db.fork_session("child-a", "taken-over", cwd="/work/app")
    assert (fork.source, fork.parent_session_id, fork.subagent_label) == ("acp", "child-a", None)

    db.delete_session("child-a")
    orphan = db.get_session("grandchild")
    assert orphan is not None and orphan.subagent_label == "subagent"


# --- search ---------------------------------------------------------------------------------------


@pytest.fixture
def searchable(db: SessionDB) -> SessionDB:
    new_session(db, "s1", title="Deploy work", cwd="/work/a")
    new_session(db, "s2", title="Other work", cwd="/work/b")
    db.append_message("s1", "user", "deploy deploy deploy the kraken service now")
    db.append_message("s1", "assistant", "I will deploy the kraken once tests pass")
    db.append_message("s2", "user", "the kraken broke after we deploy")
    db.append_message(
        "s2",
        "assistant",
        "checking",
        tool_calls=[{"id": "t1", "name": "search_files", "arguments": {"pattern": "leviathan_config"}}],
    )
    db.append_message("s2", "tool", "nothing found", tool_call_id="t1", tool_name="search_files")
    return db


def test_search_ranks_by_relevance_and_describes_each_hit(searchable: SessionDB) -> None:
    hits = searchable.search_messages(sanitize_fts_query("deploy kraken"))

    assert len(hits) == 3
    assert hits[0].session_id == "s1"
    assert [hit.rank for hit in hits] == sorted(hit.rank for hit in hits)
    top = hits[0]
    assert f"{SNIPPET_OPEN}deploy{SNIPPET_CLOSE}" in top.snippet
    assert (top.role, top.session_title, top.session_cwd) == ("user", "Deploy work", "/work/a")
    assert top.session_started_at <= top.timestamp


def test_search_role_filter_exclusion_and_limit(searchable: SessionDB) -> None:
    query = sanitize_fts_query("kraken")

    assert {hit.role for hit in searchable.search_messages(query, role_filter=["assistant"])} == {"assistant"}
    assert {hit.session_id for hit in searchable.search_messages(query, exclude_sessions={"s1"})} == {"s2"}
    assert len(searchable.search_messages(query, limit=1)) == 1
    assert searchable.search_messages("") == []


def test_search_finds_tool_names_and_arguments(searchable: SessionDB) -> None:
    by_argument = searchable.search_messages(sanitize_fts_query("leviathan_config"))
    by_tool = searchable.search_messages(sanitize_fts_query("search_files"))

    assert [hit.role for hit in by_argument] == ["assistant"]
    assert {hit.role for hit in by_tool} == {"assistant", "tool"}
    assert searchable.search_messages(sanitize_fts_query("arguments")) == []  # JSON keys are not indexed


def test_trigram_search_finds_cjk_words_and_substrings(db: SessionDB) -> None:
    new_session(db, "s1")
    db.append_message("s1", "user", "数据库迁移已经完成，请检查 postgres_replica 的状态")
    db.append_message("s1", "user", "plain english about reconfiguration")

    inside_a_run = db.search_messages(trigram_query("迁移已经"), trigram=True)
    latin_inside_cjk_message = db.search_messages(trigram_query("gres_repl"), trigram=True)

    assert len(inside_a_run) == 1 and SNIPPET_OPEN in inside_a_run[0].snippet
    assert len(latin_inside_cjk_message) == 1
    assert db.search_messages(sanitize_fts_query("迁移已经")) == []  # the word index cannot see inside a run
    # By design only messages with CJK text are in the trigram index (see session_db).
    assert db.search_messages(trigram_query("configuration"), trigram=True) == []


def test_indexes_follow_rows_changed_outside_the_api(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    message_id = db.append_message("s1", "user", "original aardvark 土豚数据")
    conn = raw(db_path)  # e.g. a future redaction or compaction rewriting a row in place
    conn.execute("UPDATE messages SET content = 'redacted pangolin' WHERE id = ?", (message_id,))
    conn.close()

    assert db.search_messages("aardvark") == []
    assert [hit.message_id for hit in db.search_messages("pangolin")] == [message_id]
    assert db.search_messages(trigram_query("土豚数据"), trigram=True) == []
    assert_indexes_consistent(db_path)


def test_broad_queries_are_ranked_among_the_newest_matches(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    strongest = db.append_message("s1", "user", "wombat " * 20)
    conn = raw(db_path)  # bulk rows through the same triggers, much faster than one transaction each
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', ?, 0)",
        [(f"wombat filler {index}",) for index in range(RANK_WINDOW - 1)],
    )
    conn.execute("COMMIT")
    conn.close()

    assert db.search_messages("wombat", limit=1)[0].message_id == strongest  # still inside the window

    db.append_message("s1", "user", "one more wombat")

    top = db.search_messages("wombat", limit=1)[0]
    assert top.message_id != strongest
    assert top.snippet.count(SNIPPET_OPEN) == 1


def test_search_excludes_rewound_messages_unless_compacted(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    rewound = db.append_message("s1", "user", "platypus rewound")
    compacted = db.append_message("s1", "user", "platypus compacted")
    conn = raw(db_path)
    conn.execute("UPDATE messages SET active = 0 WHERE id = ?", (rewound,))
    conn.execute("UPDATE messages SET active = 0, compacted = 1 WHERE id = ?", (compacted,))
    conn.close()

    assert [hit.message_id for hit in db.search_messages("platypus")] == [compacted]


def index_rows(path: Path) -> int:
    """Rows (segment pages plus two records) of the word index: fewer once segments are merged."""
    conn = raw(path)
    try:
        return int(conn.execute("SELECT count(*) FROM messages_fts_data").fetchone()[0])
    finally:
        conn.close()


def test_index_segments_are_merged_once_the_writer_pauses(tmp_path: Path) -> None:
    texts = [f"quokka note {index} " + "wallaby " * (index % 5) + "数据库" * (index % 2) for index in range(60)]
    found: dict[str, tuple[list[int], list[int]]] = {}
    rows: dict[str, int] = {}
    for label, idle_seconds in (("unmerged", 3600.0), ("merged", 0.0)):
        path = tmp_path / label / "state.db"
        with SessionDB(path, index_merge_idle_seconds=idle_seconds) as db:
            new_session(db, "s1")
            for text in texts:
                db.append_message("s1", "user", text)
            if label == "merged":
                assert db.wait_for_index_merges(timeout=60)
            found[label] = (
                sorted(hit.message_id for hit in db.search_messages("wallaby", limit=100)),
                sorted(hit.message_id for hit in db.search_messages(trigram_query("数据库"), trigram=True, limit=100)),
            )
        rows[label] = index_rows(path)  # closing did not wait an hour for the unmerged one's pause
        assert_indexes_consistent(path)

    assert rows["merged"] < rows["unmerged"]
    assert found["merged"] == found["unmerged"]
    assert (len(found["merged"][0]), len(found["merged"][1])) == (48, 30)


class _DeferralCounter(logging.Handler):
    """Counts the merger's "deferred" log lines; flags the first one and a suspicious number."""

    def __init__(self, too_many: int) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.first = threading.Event()
        self.too_many = threading.Event()
        self._limit = too_many

    def emit(self, record: logging.LogRecord) -> None:
        if "merge deferred" in record.getMessage():
            self.count += 1
            self.first.set()
            if self.count >= self._limit:
                self.too_many.set()


def test_merges_left_by_an_earlier_process_wait_politely_for_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path, index_merge_idle_seconds=3600.0) as db:  # closes before its pause: nothing merged
        new_session(db, "s1")
        for index in range(60):
            db.append_message("s1", "user", f"numbat {index} " + "bilby " * (index % 3))
    unmerged = index_rows(path)
    other_writer = raw(path)
    other_writer.execute("BEGIN IMMEDIATE")
    counter = _DeferralCounter(too_many=8)  # pauses of >= 0.25 s allow about 4 in the second below
    logger = logging.getLogger("acp_hermes_memory.session_db")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(counter)
    try:
        with SessionDB(path, index_merge_idle_seconds=0.0) as db:  # opening is enough to start merging
            assert counter.first.wait(timeout=60)
            assert not counter.too_many.wait(timeout=1.0)  # a spinning merger gets there in microseconds
            other_writer.execute("ROLLBACK")
            assert db.wait_for_index_merges(timeout=60)
            assert len(db.search_messages("bilby", limit=100)) == 40
    finally:
        logger.removeHandler(counter)
        logger.setLevel(level)
        other_writer.close()
    assert index_rows(path) < unmerged
    assert_indexes_consistent(path)


# --- schema ---------------------------------------------------------------------------------------

VERSION_1_DDL = """
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'acp', model TEXT,
    parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    started_at REAL NOT NULL, updated_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    message_count INTEGER NOT NULL DEFAULT 0, tool_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0, api_call_count INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL NOT NULL DEFAULT 0, cwd TEXT, mode TEXT, title TEXT,
    archived INTEGER NOT NULL DEFAULT 0, additional_directories TEXT NOT NULL DEFAULT '[]',
    model_config TEXT NOT NULL DEFAULT '{}', system_prompt TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL, tool_call_id TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER,
    finish_reason TEXT, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0,
    content TEXT NOT NULL DEFAULT '', tool_calls TEXT, reasoning TEXT, payload TEXT, display TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_sessions_recent ON sessions(updated_at, id);
CREATE INDEX idx_sessions_cwd_recent ON sessions(cwd, updated_at, id);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
INSERT INTO sessions (id, cwd, title, started_at, updated_at, message_count, model_config)
    VALUES ('old', '/work/old', 'Before search existed', 10.0, 20.0, 2, '{"thought_level": "medium"}');
INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old', 'user', 'remember the axolotl', 11.0);
INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old', 'assistant', '蝾螈数据库已保存', 12.0);
INSERT INTO state_meta VALUES ('owner', 'test');
PRAGMA user_version = 1;
"""


def test_version_1_database_is_migrated_and_keeps_its_data(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = raw(db_path)
    conn.executescript(VERSION_1_DDL)
    conn.close()

    with SessionDB(db_path) as db:
        old = db.get_session("old")
        messages = db.messages("old")
        word_hits = db.search_messages("axolotl")
        cjk_hits = db.search_messages(trigram_query("螈数据"), trigram=True)
        assert db.get_meta("owner") == "test"
        db.append_message("old", "user", "new axolotl message")
        assert len(db.search_messages("axolotl")) == 2

    conn = raw(db_path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    assert old is not None
    assert (old.title, old.cwd, old.message_count, old.model_config) == (
        "Before search existed",
        "/work/old",
        2,
        {"thought_level": "medium"},
    )
    assert [m.content for m in messages] == ["remember the axolotl", "蝾螈数据库已保存"]
    assert [hit.session_id for hit in word_hits] == ["old"]
    assert [hit.role for hit in cjk_hits] == ["assistant"]
    assert_indexes_consistent(db_path)


# The trigram index's insert trigger as schema version 2 wrote it: the GLOB alone decides.
VERSION_2_TRIGRAM_TEXT = (
    "coalesce(new.content, '') || ' ' || coalesce(new.tool_name, '') || ' ' || replace(replace(replace("
    "coalesce(new.tool_calls, ''), '\"id\":', ' '), '\"name\":', ' '), '\"arguments\":', ' ')"
)
VERSION_2_TRIGRAM_INSERT = (
    "CREATE TRIGGER messages_fts_trigram_insert AFTER INSERT ON messages BEGIN "
    f"INSERT INTO messages_fts_trigram(rowid, content) SELECT new.id, {VERSION_2_TRIGRAM_TEXT} "
    f"WHERE ({VERSION_2_TRIGRAM_TEXT}) GLOB '{CJK_GLOB}'; END"
)


def test_version_2_database_gets_the_cheaper_cjk_test_and_keeps_its_index(db_path: Path) -> None:
    with SessionDB(db_path) as db:
        new_session(db, "s1")
        db.append_message("s1", "user", "早期的会话 about tapirs")
    conn = raw(db_path)
    conn.execute("DROP TRIGGER messages_fts_trigram_insert")
    conn.execute(VERSION_2_TRIGRAM_INSERT)
    conn.execute("PRAGMA user_version = 2")
    conn.close()

    with SessionDB(db_path) as db:
        db.append_message("s1", "user", "后来的会话 about tapirs")
        db.append_message("s1", "user", "plain tapirs")
        assert len(db.search_messages(trigram_query("的会话"), trigram=True)) == 2

    conn = raw(db_path)
    (trigger,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_trigram_insert'").fetchone()
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    assert "length(CAST(" in trigger
    assert_indexes_consistent(db_path)


def test_trigram_index_holds_exactly_the_messages_with_cjk_letters(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    texts = {
        "ascii": "plain words only",
        "latin": "café naïve résumé",
        "emoji": "shipped it 🚀",
        "punctuation": "only CJK punctuation，。",
        "han": "数据库",
        "kana": "データ",
        "hangul": "데이터",
        "ideograph in an astral plane": "𠀋 rare",
    }
    ids = {label: db.append_message("s1", "user", text) for label, text in texts.items()}
    in_tool_call = db.append_message(
        "s1", "assistant", "calling", tool_calls=[{"id": "c1", "name": "search_files", "arguments": {"q": "数据"}}]
    )
    conn = raw(db_path)
    indexed = {row[0] for row in conn.execute("SELECT id FROM messages_fts_trigram_source")}
    conn.close()

    expected = {ids[label] for label, text in texts.items() if any(is_cjk_char(char) for char in text)}
    assert expected == {ids["han"], ids["kana"], ids["hangul"], ids["ideograph in an astral plane"]}
    assert indexed == expected | {in_tool_call}
    assert_indexes_consistent(db_path)  # the trigger put exactly these rows in the index


def test_database_is_wal_with_foreign_keys_and_reopens_cheaply(db: SessionDB, db_path: Path) -> None:
    new_session(db, "s1")
    db.append_message("s1", "user", "persisted")
    db.close()
    db.close()  # idempotent

    conn = raw(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
    with SessionDB(db_path) as reopened:
        assert [m.content for m in reopened.messages("s1")] == ["persisted"]


def test_without_full_text_support_writes_work_and_search_degrades(db_path: Path) -> None:
    with SessionDB(db_path) as full:
        new_session(full, "s1")
        full.append_message("s1", "user", "written with search on: narwhal")

    with SessionDB(db_path, search_support=SearchSupport(words=False, trigrams=False)) as degraded:
        degraded.append_message("s1", "user", "written without search: narwhal 独角鲸数据")
        assert (degraded.search_available, degraded.trigram_available) == (False, False)
        assert degraded.search_messages("narwhal") == []
        assert len(degraded.messages("s1")) == 2
        assert degraded.wait_for_index_merges(timeout=0)  # no index, nothing to merge

    with SessionDB(db_path, search_support=SearchSupport(words=True, trigrams=False)) as words_only:
        words_only.append_message("s1", "user", "written without trigrams: 独角鲸数据库")
        assert words_only.search_messages(trigram_query("独角鲸"), trigram=True) == []
        assert len(words_only.search_messages("narwhal")) == 2

    with SessionDB(db_path) as repaired:  # full support again: missing triggers found, indexes rebuilt
        assert len(repaired.search_messages("narwhal")) == 2
        assert len(repaired.search_messages(trigram_query("独角鲸"), trigram=True)) == 2
        assert repaired.get_session("s1").message_count == 3  # type: ignore[union-attr]
    assert_indexes_consistent(db_path)


# --- concurrency ----------------------------------------------------------------------------------


def append_from_threads(db: SessionDB, session_id: str, threads: int, appends: int, word: str) -> None:
    """Every thread appends ``appends`` messages to one session at the same time."""
    barrier = threading.Barrier(threads)

    def append_many(worker: int) -> None:
        barrier.wait()
        for index in range(appends):
            db.append_message(session_id, "user", f"thread {worker} {word} {index}")

    workers = [threading.Thread(target=append_many, args=(worker,)) for worker in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def test_threads_sharing_one_instance_lose_nothing(db: SessionDB) -> None:
    new_session(db, "s1")
    append_from_threads(db, "s1", threads=4, appends=50, word="message")

    assert len(db.messages("s1")) == 200
    assert db.get_session("s1").message_count == 200  # type: ignore[union-attr]


def test_merges_between_the_writes_of_several_threads_lose_nothing(db_path: Path) -> None:
    with SessionDB(db_path, index_merge_idle_seconds=0.0) as db:  # merging whenever no write runs
        new_session(db, "s1")
        append_from_threads(db, "s1", threads=3, appends=80, word="echidna")
        assert db.wait_for_index_merges(timeout=60)

        assert len(db.search_messages("echidna", limit=1_000)) == 240
        assert db.get_session("s1").message_count == 240  # type: ignore[union-attr]
    assert_indexes_consistent(db_path)


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from acp_hermes_memory.session_db import SessionDB

    path, name, shared, count = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    with SessionDB(path) as db:
        print("ready", flush=True)
        sys.stdin.readline()  # start line: every writer begins at once
        for index in range(count):
            db.append_message(name, "user", f"{name} own {index}")
            calls = [{"id": f"{name}-{index}", "name": "terminal", "arguments": {"command": "true"}}]
            db.append_message(shared, "assistant", f"{name} shared {index}", tool_calls=calls)
    print("done", flush=True)
    """
)


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_appending_at_once_lose_nothing(db_path: Path, processes: int) -> None:
    count = 150
    names = [f"proc{index}" for index in range(processes)]
    with SessionDB(db_path) as db:
        new_session(db, "shared")
        for name in names:
            new_session(db, name)
    writers = [spawn(WRITER, str(db_path), name, "shared", str(count)) for name in names]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        out, _ = writer.communicate()
        assert writer.returncode == 0
        assert out.strip() == "done"

    with SessionDB(db_path) as db:
        for name in names:
            own = db.messages(name)
            assert [m.content for m in own] == [f"{name} own {index}" for index in range(count)]
            assert db.get_session(name).message_count == count  # type: ignore[union-attr]
        shared = db.messages("shared")
        record = db.get_session("shared")
        assert record is not None
        assert len(shared) == record.message_count == record.tool_call_count == processes * count
        assert {m.content for m in shared} == {f"{name} shared {i}" for name in names for i in range(count)}
        for name in names:  # each writer's rows are in its own order
            mine = [m.content for m in shared if m.content.startswith(f"{name} ")]
            assert mine == [f"{name} shared {index}" for index in range(count)]
        assert len(db.search_messages("shared", limit=10_000)) == processes * count
    assert_indexes_consistent(db_path)


OPENER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from acp_hermes_memory.session_db import SessionDB

    print("ready", flush=True)
    sys.stdin.readline()
    with SessionDB(Path(sys.argv[1])) as db:
        db.create_session(sys.argv[2], cwd="/w", model="m", mode="default", model_config={}, system_prompt="p")
        db.append_message(sys.argv[2], "user", "hello")
    print("done", flush=True)
    """
)


def test_processes_creating_a_new_database_together_all_succeed(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    openers = [spawn(OPENER, str(db_path), f"s{index}") for index in range(4)]
    for opener in openers:
        assert opener.stdout is not None and opener.stdout.readline().strip() == "ready"
    for opener in openers:
        assert opener.stdin is not None
        opener.stdin.write("go\n")
        opener.stdin.flush()
    outputs = [opener.communicate()[0].strip() for opener in openers]

    assert outputs == ["done"] * 4
    with SessionDB(db_path) as db:
        assert {s.id for s in db.list_sessions()[0]} == {"s0", "s1", "s2", "s3"}
    conn = raw(db_path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


CRASHER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from acp_hermes_memory.session_db import SessionDB

    filler = " ".join(f"word{n} 数据{n}" for n in range(40))
    db = SessionDB(Path(sys.argv[1]))
    index = 0
    while True:
        message_id = db.append_message("victim", "user", f"row {index} {filler}", payload={"index": index})
        print(message_id, flush=True)  # printed only after the commit returned
        index += 1
    """
)


def test_killed_writer_leaves_an_intact_database_with_every_committed_row(db_path: Path) -> None:
    with SessionDB(db_path) as db:
        new_session(db, "victim")
    writer = spawn(CRASHER, str(db_path))
    assert writer.stdout is not None
    committed = [int(writer.stdout.readline()) for _ in range(300)]  # past several checkpoints
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL

    conn = raw(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with SessionDB(db_path) as db:
        rows = db.messages("victim")
        record = db.get_session("victim")
        assert set(committed) <= {m.id for m in rows}
        assert record is not None and record.message_count == len(rows)
        assert [m.payload for m in rows] == [{"index": index} for index in range(len(rows))]
        db.append_message("victim", "user", "after the crash")
        assert len(db.search_messages("word7", limit=10_000)) == len(rows)
    assert_indexes_consistent(db_path)


# -- a conversation held by two processes: compaction's continuation


def test_continue_segment_carries_what_others_stored_and_ends_the_segment_in_one_write(
    db: SessionDB, db_path: Path
) -> None:
    new_session(db, "root")
    read = db.append_message("root", "user", "read by the compacting process", payload=[{"type": "text", "text": "a"}])
    own = db.append_message("root", "assistant", "its own", payload=[{"type": "text", "text": "b"}])
    other = db.append_message("root", "user", "from another window", payload=[{"type": "text", "text": "c"}],
                              display={"prompt": [], "steer": True})
    db.append_message("root", "assistant", "shown only: a slash command's reply")  # no payload: not history
    card = NewMessage("tool", "Context: about 9 → 3 tokens.", tool_call_id="compact-1", tool_name="compact",
                      display={"title": "Compacting conversation"})
    kept = NewMessage("user", "", payload=[{"type": "text", "text": "summary"}], display={"carried": True})
    rows = db.continue_segment("root", "next", system_prompt="rebuilt", messages=[card, kept], read_up_to=read,
                               own=[own])
    assert rows is not None
    assert [(r.role, r.payload, r.display.get("carried")) for r in rows] == [
        ("tool", None, None),
        ("user", [{"type": "text", "text": "summary"}], True),
        ("user", [{"type": "text", "text": "c"}], True),  # another window's, carried and still a steer
    ]
    assert rows[-1].display["steer"] is True and rows[-1].content == ""  # searched once, in the old segment
    assert [s.id for s in db.segments("root")] == ["root", "next"]
    record = db.get_session("next")
    assert record is not None and record.system_prompt == "rebuilt" and record.message_count == 3
    assert [m.id for m in db.messages("root")][2] == other  # the old segment keeps its rows, now ended
    assert_indexes_consistent(db_path)

    # Compacted again from the old segment (another process that read it before): nothing changes.
    assert db.continue_segment("root", "second", system_prompt="x", messages=[card], read_up_to=0, own=[]) is None
    assert db.get_session("second") is None and [s.id for s in db.segments("root")] == ["root", "next"]


def test_a_message_for_a_compacted_segment_goes_to_its_continuation(db: SessionDB) -> None:
    new_session(db, "root")
    before = db.append_message("root", "user", "before")
    db.continue_segment("root", "next", system_prompt="p", messages=[], read_up_to=0, own=[])
    db.continue_segment("next", "last", system_prompt="p", messages=[], read_up_to=0, own=[])
    late = db.append_message("root", "assistant", "from a process still on the first segment")
    assert [m.id for m in db.messages("last")][-1] == late
    assert [m.content for m in db.messages("root")] == ["before"]
    news = db.segment_news("root", 0)
    assert news is not None and news.ended and news.message_ids == [before]
    tail = db.segment_news("last", 0)
    assert tail is not None and not tail.ended and tail.message_ids[-1] == late
    assert db.segment_news("gone", 0) is None
