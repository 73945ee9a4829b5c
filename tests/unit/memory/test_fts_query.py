"""FTS5 query sanitising: what comes out, and that nothing that comes out can break a real index."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_memory.fts_query import (
    MAX_QUERY_CHARS,
    is_cjk_query,
    sanitize_fts_query,
    trigram_query,
)
from acp_hermes_memory.session_db import SNIPPET_CLOSE, SNIPPET_OPEN, SessionDB


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello world", "hello world"),
        ('"exact phrase" more', '"exact phrase" more'),
        ('unbalanced "quote here', "unbalanced quote here"),
        ('"one" two "three', '"one" two three'),
        ("chat-send", '"chat-send"'),
        ("P2.2", '"P2.2"'),
        ("my-app.config.ts", '"my-app.config.ts"'),
        ("my_var", '"my_var"'),
        ("fix the chat-send bug", 'fix the "chat-send" bug'),
        ("col:value", "col value"),
        ("{content title}:x", "content title x"),
        ("(a OR b) AND c", "a OR b AND c"),
        ("^start +plus", "start plus"),
        ("AND foo OR", "foo"),
        ("foo AND OR NOT bar", "foo AND bar"),
        ("NOT", ""),
        ("foo and or bar", "foo and or bar"),
        ("NEAR(a b, 3)", '"NEAR" a "b," 3'),
        ("*", ""),
        ("***foo", "foo"),
        ("deploy*", "deploy*"),
        ("deploy**", "deploy*"),
        ("foo.bar*", '"foo.bar"*'),
        ("", ""),
        ("   ", ""),
        ("!!! --- ...", ""),
        ('"" "  " "!!"', ""),
        ("🚀", ""),
        ("launch 🚀", "launch"),
        ("foo\x00bar\ud800", "foo bar"),
        ("it's", '"it\'s"'),
        ("SELECT * FROM messages; DROP TABLE sessions; --", 'SELECT FROM "messages;" DROP TABLE "sessions;"'),
    ],
)
def test_sanitize_fts_query(text: str, expected: str) -> None:
    assert sanitize_fts_query(text) == expected


def test_sanitize_caps_the_input_length() -> None:
    assert len(sanitize_fts_query("ab " * 5_000).split()) == MAX_QUERY_CHARS // 3 + 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("数据库迁移", '"数据库迁移"'),
        ("数据库迁移postgres", '"数据库迁移" "postgres"'),
        ('"数据库 迁移"', '"数据库 迁移"'),
        ("テスト OR 数据库", '"テスト" OR "数据库"'),
        ("数据库。迁移已完成", '"数据库" "迁移已完成"'),
        ("迁移", ""),
        ("数据 迁移", ""),
        ("OR 数据库 AND", '"数据库"'),
        ("a.b 数据库*", '"a.b" "数据库"'),
        ("", ""),
    ],
)
def test_trigram_query(text: str, expected: str) -> None:
    assert trigram_query(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("数据", True), ("データ", True), ("한국어", True), ("fix 数据库 now", True), ("hello", False), ("，。", False)],
)
def test_is_cjk_query(text: str, expected: bool) -> None:
    assert is_cjk_query(text) is expected


NASTY_INPUTS = [
    '"',
    '""',
    '"""',
    "'",
    "*",
    "**",
    "* foo",
    "foo *",
    "NEAR(",
    "NEAR(a b",
    "NEAR(a b, 10)",
    "NEAR",
    "col:x",
    "content:x",
    ":",
    "-",
    "-foo",
    "foo -bar",
    "^",
    "^foo",
    "+",
    "a + b",
    "{",
    "}",
    "{a b}:c",
    "(",
    ")",
    "((a)",
    "a OR",
    "OR",
    "AND AND",
    "NOT NOT x",
    "a NOT",
    "x AND (y OR",
    "SELECT * FROM sessions WHERE 1=1; --",
    "'; DROP TABLE messages; --",
    "1' OR '1'='1",
    "\\",
    "\\x00",
    "\x00",
    "\x1a",
    "\ud83d",
    "tab\there",
    "new\nline",
    "emoji 🚀🔥 party",
    "👍🏽",
    "ZWJ 👨‍👩‍👧",
    "combining é é",
    "Ελληνικά και русский",
    "עברית العربية",
    "数据库迁移已经完成",
    "数据",
    "データベース",
    "한국어 검색",
    "，。！",
    "$HOME/.config",
    "a@b.com",
    "C#",
    "x=1&y=2",
    "~/path/to/file.py:12",
    "https://example.com/a?b=c#d",
    "[brackets]",
    "<html>",
    "`backticks`",
    "50%",
    "a|b",
    "foo\u200bbar",
    "\ufeffbom",
    "a" * 3_000,
    '"' * 101,
    "( " * 500,
]


def _random_queries(count: int) -> Iterator[str]:
    characters = "abcXYZ019 \"'*:^+-(){}[],.;_/\\NEARORANDNOT数据库テスト🚀\t\n\x00é"
    alphabet = [*characters, " AND ", " OR ", " NOT ", "NEAR(", "col:"]
    rng = random.Random(20_240)
    for _ in range(count):
        yield "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(tmp_path / "state.db") as database:
        database.create_session("s1", cwd="/work", model="m", mode="default", model_config={}, system_prompt="prompt")
        for text in (
            "deploy the chat-send fix to P2.2",
            "the deployment config lives in my-app.config.ts",
            "an exact phrase appears here",
            "数据库迁移已经完成 and postgres is fine",
            "NEAR the col:x value, it's C# code",
        ):
            database.append_message("s1", "user", text)
        yield database


def test_no_sanitised_query_breaks_the_real_indexes(db: SessionDB) -> None:
    queries = [*NASTY_INPUTS, *_random_queries(2_000)]
    for text in queries:
        word_query = sanitize_fts_query(text)
        assert isinstance(db.search_messages(word_query), list), text
        substring_query = trigram_query(text)
        assert isinstance(db.search_messages(substring_query, trigram=True), list), text


@pytest.mark.parametrize(
    ("text", "trigram", "expected_fragment"),
    [
        ("chat-send", False, "chat-send"),
        ("P2.2", False, "P2.2"),
        ("my-app.config.ts", False, "my-app.config.ts"),
        ('"exact phrase"', False, "exact phrase"),
        ("deploy*", False, "deploy"),
        ("col:x", False, "col:x"),
        ("it's", False, "it's"),
        ("迁移已经", True, "迁移已经"),
        ("postgres 数据库", True, "postgres"),
    ],
)
def test_sanitised_queries_still_find_what_was_meant(
    db: SessionDB, text: str, trigram: bool, expected_fragment: str
) -> None:
    query = trigram_query(text) if trigram else sanitize_fts_query(text)
    hits = db.search_messages(query, trigram=trigram)
    assert hits, query
    assert any(expected_fragment in hit.snippet.replace(SNIPPET_OPEN, "").replace(SNIPPET_CLOSE, "") for hit in hits)
