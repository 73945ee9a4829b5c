"""Finding a message by the id in its display record, where it ends with its tool results, and a fork
cut after it: on a real SQLite file (what a fork at a message and ``session/rewind`` stand on)."""

from __future__ import annotations

from acp_hermes_memory.session_db import SessionDB

KEYS = ("client_message_id", "message_id")


def conversation(db: SessionDB) -> list[int]:
    """A prompt, a model message calling two tools, their results, the answer, a later prompt."""
    db.create_session("s", cwd="/work", model="m", mode="default", model_config={}, system_prompt="p")
    calls = [{"id": "c1", "name": "read_file", "arguments": "{}"}, {"id": "c2", "name": "read_file", "arguments": "{}"}]
    return [
        db.append_message("s", "user", "look", display={"prompt": [], "client_message_id": "m1"}),
        db.append_message("s", "assistant", "reading", tool_calls=calls, display={"message_id": "a1"}),
        db.append_message("s", "tool", "one", tool_call_id="c1", tool_name="read_file", display={}),
        db.append_message("s", "tool", "two", tool_call_id="c2", tool_name="read_file", display={}),
        db.append_message("s", "assistant", "done", display={"message_id": "a2"}),
        db.append_message("s", "user", "more", display={"prompt": [], "message_id": "m2"}),
    ]


def test_a_message_is_found_by_either_key_or_by_its_row(db: SessionDB) -> None:
    rows = conversation(db)
    assert db.message_named("s", "m1", KEYS) == (rows[0], "user")
    assert db.message_named("s", "a1", KEYS) == (rows[1], "assistant")
    assert db.message_named("s", "m2", KEYS) == (rows[5], "user")
    assert db.message_named("s", "nothing", KEYS) is None
    assert db.message_named("s", "user-x", KEYS, rows[4]) == (rows[4], "assistant")  # an older row, by its id
    assert db.message_named("s", "user-x", KEYS, rows[2]) is None  # a tool result is no message of its own
    assert db.message_named("other", "m1", KEYS) is None


def test_a_model_message_ends_after_the_results_of_its_calls(db: SessionDB) -> None:
    rows = conversation(db)
    assert db.message_end("s", rows[1]) == rows[3]
    assert db.message_end("s", rows[0]) == rows[0]
    assert db.message_end("s", rows[4]) == rows[4]


def test_a_fork_up_to_a_message_copies_it_and_nothing_after(db: SessionDB) -> None:
    rows = conversation(db)
    db.fork_session("s", "f", cwd="/work", up_to=db.message_end("s", rows[1]))
    copied = db.messages("f")
    assert [row.content for row in copied] == ["look", "reading", "one", "two"]
    assert copied[1].display == {"message_id": "a1"}  # the ids go along: the fork shows the same ones
    assert [row.content for row in db.messages("s")] == ["look", "reading", "one", "two", "done", "more"]
    record = db.get_session("f")
    assert record is not None and record.message_count == 4
