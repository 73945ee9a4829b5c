"""Search matches written for people (``memory.recall.excerpt``): the message's words, its tool calls
as one-liners, the matched words as spans, cut around the first match; the model's snippets unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_hermes_memory.recall import Excerpt, excerpt, recall
from acp_hermes_memory.session_db import SessionDB


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(tmp_path / "acp-hermes" / "state.db") as database:
        database.create_session("s1", cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        yield database


def excerpts(db: SessionDB, query: str) -> list[str]:
    result = anyio.run(lambda: recall(db, query, current_session=None, role_filter=None))
    return [e.render("«", "»") for s in result.sessions for e in s.excerpts]


def test_tool_calls_read_as_one_liners_with_the_match_marked(db: SessionDB) -> None:
    db.append_message("s1", "assistant", "Running it.", tool_calls=[
        {"id": "toolu_1", "name": "terminal", "arguments": {"command": "rg zephyrine src/", "timeout": 30}}])
    db.append_message("s1", "assistant", "", tool_calls=[
        {"id": "toolu_2", "name": "write_file", "arguments": {"path": "a.py", "content": "# the Zephyrine parser\n"}}])
    shown = excerpts(db, "zephyrine")
    assert "Running it. · ran terminal: rg «zephyrine» src/" in shown
    assert "ran write_file: a.py (content: # the «Zephyrine» parser)" in shown  # the argument that matched
    result = anyio.run(lambda: recall(db, "zephyrine", current_session=None, role_filter=None))
    assert any(">>>zephyrine<<<" in snippet for snippet in result.sessions[0].snippets)  # the model's, as they were


def test_tool_output_says_whose_it_is(db: SessionDB) -> None:
    db.append_message("s1", "tool", "src/lexer.py:3: zephyrine", tool_call_id="toolu_1", tool_name="terminal")
    assert excerpts(db, "zephyrine") == ["output of terminal: src/lexer.py:3: «zephyrine»"]


def test_a_long_message_is_cut_around_its_first_match_at_word_boundaries(db: SessionDB) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    db.append_message("s1", "user", f"{words} zephyrine {words}")
    (shown,) = excerpts(db, "zephyrine")
    assert shown.startswith("…w") and shown.endswith("…") and "«zephyrine»" in shown
    assert len(shown) <= 170 and shown.index("«") < 60  # a little before the match, most of the room after it
    pieces = shown.strip("…").replace("«zephyrine»", "w0").split()
    assert all(piece.startswith("w") and piece[1:].isdigit() for piece in pieces)  # no word cut in half


def test_only_whole_words_are_marked_and_case_is_kept() -> None:
    class Row:
        role, content, tool_calls, tool_name = "user", "Lexer, lexers and the LEXER", None, None

    shown = excerpt(Row(), ">>>Lexer<<<, lexers and the >>>LEXER<<<")  # type: ignore[arg-type]
    assert shown.render("[", "]") == "[Lexer], lexers and the [LEXER]"


def test_without_its_message_the_snippet_itself_is_shown_without_markers() -> None:
    shown = excerpt(None, "…a >>>zephyrine<<< lexer…")
    assert shown == Excerpt("…a zephyrine lexer…", ((3, 12),))
    assert shown.render("**", "**", lambda t: t.replace("…", "...")) == "...a **zephyrine** lexer..."
