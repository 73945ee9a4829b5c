"""Turn free text (usually written by the model) into an FTS5 MATCH expression that cannot fail.

FTS5 has its own query language: bare punctuation, ``col:x`` column filters, ``NEAR(``,
``^`` and dangling ``AND`` are syntax errors. The search tool passes whatever the model wrote,
so every query goes through here first. The result keeps what users mean most of the time
(balanced ``"phrases"``, ``AND``/``OR``/``NOT`` between terms, ``prefix*``) and quotes every
term that contains punctuation (``chat-send``, ``P2.2``, ``my-app.config.ts``), which FTS5 then
matches as a phrase of its parts. Quoted strings are always legal, so the output never raises
``sqlite3.OperationalError``.

CJK text has no spaces between words, so the word index cannot find a word inside a run;
such queries go to the trigram index instead (``is_cjk_query`` / ``trigram_query``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_QUERY_CHARS = 2_048
TRIGRAM_MIN_CHARS = 3

_OPERATORS = frozenset({"AND", "OR", "NOT"})
# Outside quotes these are FTS5 syntax (column sets, grouping, column filter, initial token,
# phrase concatenation); they become word separators.
_SYNTAX_TO_SPACE = str.maketrans(dict.fromkeys("+{}():^", " "))
_STARS = re.compile(r"\*+")
# Letters only (Han with extensions, radicals, kana, Hangul); CJK punctuation separates runs.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF65, 0xFF9F),
    (0x20000, 0x3134F),
)
# An SQLite GLOB pattern for "contains a CJK character", used to pick what the trigram index holds.
CJK_GLOB = "*[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES) + "]*"


@dataclass(frozen=True, slots=True)
class _Piece:
    """A balanced ``"…"`` phrase (kept verbatim) or a stretch of unquoted text."""

    text: str
    quoted: bool


def is_cjk_char(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def is_cjk_query(text: str) -> bool:
    """True when the text holds CJK characters, which only the trigram index can find."""
    return any(is_cjk_char(char) for char in text[:MAX_QUERY_CHARS])


def sanitize_fts_query(text: str) -> str:
    """A MATCH expression for the word (unicode61) index, or "" when nothing searchable is left."""
    tokens: list[str] = []
    for piece in _pieces(text):
        if piece.quoted:
            if _searchable(piece.text):
                tokens.append(_quote(piece.text))
            continue
        for word in piece.text.translate(_SYNTAX_TO_SPACE).split():
            if word in _OPERATORS:
                tokens.append(word)
            elif token := _word_token(word):
                tokens.append(token)
    return " ".join(_drop_dangling_operators(tokens))


def trigram_query(text: str) -> str:
    """A MATCH expression for the trigram index, or "" when nothing long enough is left.

    Every term becomes a quoted substring. Terms are split where CJK and other scripts meet
    ("数据库迁移postgres" -> "数据库迁移" "postgres"), so each run is matched on its own.
    Runs shorter than three characters cannot be matched by trigrams and are dropped, which
    widens the query rather than failing it.
    """
    tokens: list[str] = []
    for piece in _pieces(text):
        if piece.quoted:
            if len(piece.text.strip()) >= TRIGRAM_MIN_CHARS and _searchable(piece.text):
                tokens.append(_quote(piece.text.strip()))
            continue
        for word in piece.text.translate(_SYNTAX_TO_SPACE).split():
            if word in _OPERATORS:
                tokens.append(word)
                continue
            for run in _script_runs(word):
                run = _trim_punctuation(run)
                if len(run) >= TRIGRAM_MIN_CHARS:
                    tokens.append(_quote(run))
    return " ".join(_drop_dangling_operators(tokens))


def _pieces(text: str) -> list[_Piece]:
    """Split off balanced double-quoted phrases; an unmatched quote becomes a space."""
    text = _clean(text[:MAX_QUERY_CHARS])
    pieces: list[_Piece] = []
    plain: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        closing = text.find('"', position + 1) if char == '"' else -1
        if char == '"' and closing == -1:
            plain.append(" ")
            position += 1
        elif char == '"':
            pieces.append(_Piece("".join(plain), quoted=False))
            plain = []
            pieces.append(_Piece(text[position + 1 : closing], quoted=True))
            position = closing + 1
        else:
            plain.append(char)
            position += 1
    pieces.append(_Piece("".join(plain), quoted=False))
    return pieces


def _clean(text: str) -> str:
    """Control characters become spaces; lone surrogates (unencodable as UTF-8) go."""
    kept: list[str] = []
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            continue
        kept.append(" " if category == "Cc" else char)
    return "".join(kept)


def _searchable(text: str) -> bool:
    return any(char.isalnum() for char in text)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _word_token(word: str) -> str:
    """One unquoted word as a safe token: bare, quoted, or "" when nothing searchable is in it."""
    word = _STARS.sub("*", word).lstrip("*")
    prefix = word.endswith("*")
    core = word.rstrip("*")
    if not _searchable(core):
        return ""
    bare = all(char.isalnum() for char in core) and core != "NEAR"
    token = core if bare else _quote(core)
    return token + "*" if prefix else token


def _trim_punctuation(run: str) -> str:
    """Drop non-alphanumeric characters at the edges ("foo." -> "foo"); "" if nothing is left."""
    start, end = 0, len(run)
    while start < end and not run[start].isalnum():
        start += 1
    while end > start and not run[end - 1].isalnum():
        end -= 1
    return run[start:end]


def _script_runs(word: str) -> list[str]:
    """Maximal runs of CJK and of non-CJK characters, in order."""
    runs: list[str] = []
    for char in word:
        if runs and is_cjk_char(runs[-1][-1]) == is_cjk_char(char):
            runs[-1] += char
        else:
            runs.append(char)
    return runs


def _drop_dangling_operators(tokens: list[str]) -> list[str]:
    """Operators are binary: drop them at either end and keep only the first of a run."""
    kept: list[str] = []
    for token in tokens:
        if token in _OPERATORS and (not kept or kept[-1] in _OPERATORS):
            continue
        kept.append(token)
    while kept and kept[-1] in _OPERATORS:
        kept.pop()
    return kept
