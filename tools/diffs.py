"""Pure text-editing logic behind the ``patch`` tool: no I/O, so every rule is unit-testable.

Two patch dialects are understood because models write both: the unified diff (``--- a/x``,
``+++ b/x``, ``@@ -l,s +l,s @@``) and Hermes's V4A format (``*** Begin Patch`` …). Both parse
into the same ``FilePatch``/``Hunk`` values and are applied by one engine that keeps each file's
line endings (CRLF stays CRLF) and its final-newline state. Failures raise ``PatchError`` whose
message tells the model what did not match and where the closest text is, so it can retry
without re-reading the whole file.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from acp_hermes_memory.values import value

FileAction = Literal["update", "create", "delete", "move"]


class PatchError(ValueError):
    """A patch or replacement that cannot be applied; the message says why and what to do."""


@value
class HunkLine:
    op: str  # " " context, "-" removed, "+" added
    text: str
    newline: bool = True  # False when "\ No newline at end of file" follows the line

    def without_newline(self) -> HunkLine:
        return HunkLine(self.op, self.text, newline=False)


@value
class Hunk:
    lines: tuple[HunkLine, ...]
    old_start: int | None = None  # 1-based line in the original file; None when the patch has none
    anchor: str | None = None  # V4A "@@ text": a line at or just before the hunk
    header: str = "@@"

    @property
    def old_lines(self) -> list[str]:
        return [line.text for line in self.lines if line.op != "+"]

    @property
    def changes(self) -> bool:
        return any(line.op != " " for line in self.lines)


@value
class FilePatch:
    """The changes one patch makes to one file (``new_path`` is the target of a move)."""

    action: FileAction
    path: str
    hunks: tuple[Hunk, ...] = ()
    new_path: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.path,) if self.new_path is None else (self.path, self.new_path)

    def with_paths(self, convert: Callable[[str], str]) -> FilePatch:
        """The same patch with its paths rewritten (e.g. resolved against the session cwd)."""
        new_path = None if self.new_path is None else convert(self.new_path)
        return FilePatch(self.action, convert(self.path), self.hunks, new_path)


@value
class FileEdit:
    """The net effect on one file: ``old_text`` None creates it, ``new_text`` None deletes it."""

    path: str
    old_text: str | None
    new_text: str | None


@value
class Candidate:
    """A region of a file that resembles text the model expected to find."""

    start: int  # 1-based line number
    lines: tuple[str, ...]
    similarity: float
    whitespace_only: bool  # identical once whitespace is ignored


# ---------------------------------------------------------------------------------------------
# Parsing


_V4A_FILE = re.compile(r"^\*\*\*\s*(Update|Add|Delete|Move) File:\s*(.*?)\s*$")
_V4A_BEGIN = re.compile(r"^\*\*\*\s*Begin Patch\s*$")
_V4A_END = re.compile(r"^\*\*\*\s*End Patch\s*$")
_V4A_EOF = re.compile(r"^\*\*\*\s*End of File\s*$")
_V4A_MOVE_TO = re.compile(r"^\*\*\*\s*Move to:\s*(.*?)\s*$")
_HUNK_HEADER = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+")


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified diff or a V4A patch, telling them apart by the first line."""
    lines = _patch_lines(text)
    first = next((line for line in lines if line.strip()), "")
    if _V4A_BEGIN.match(first) or _V4A_FILE.match(first):
        return _parse_v4a(lines)
    return _parse_unified(lines)


def parse_unified_diff(text: str) -> list[FilePatch]:
    return _parse_unified(_patch_lines(text))


def parse_v4a_patch(text: str) -> list[FilePatch]:
    return _parse_v4a(_patch_lines(text))


def _patch_lines(text: str) -> list[str]:
    """Patch text as lines without CR, minus a Markdown fence a model may have wrapped it in."""
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].startswith("```"):
        lines.pop(0)
        if lines and lines[-1].strip() == "```":
            lines.pop()
    return lines


def _parse_unified(lines: list[str]) -> list[FilePatch]:
    patches: list[FilePatch] = []
    renamed: dict[str, str] = {}  # git's "rename from"/"rename to" lines, until their file header
    i = 0
    while i < len(lines):
        line = lines[i]
        if _is_file_header(lines, i):
            old, new = _header_paths(lines[i][4:], lines[i + 1][4:])
            i += 2
            hunks: list[Hunk] = []
            while i < len(lines) and lines[i].startswith("@@"):
                hunk, i = _read_unified_hunk(lines, i)
                if not hunk.lines:
                    raise PatchError(f"{new or old}: hunk {len(hunks) + 1} ({hunk.header}) has no lines.")
                hunks.append(hunk)
            declared = renamed.pop("from", None) == old and renamed.pop("to", None) == new
            patches.append(_unified_file_patch(old, new, hunks, rename_declared=declared))
            renamed.clear()
        elif line.startswith("@@"):
            raise PatchError(
                f"patch line {i + 1}: the hunk header {line!r} comes before any file header; "
                "each file's hunks must follow '--- a/<path>' and '+++ b/<path>' lines."
            )
        else:  # git metadata and prose; only a pure rename (no hunks) needs anything from it
            if line.startswith("diff ") and len(renamed) == 2:
                patches.append(FilePatch("move", renamed["from"], new_path=renamed["to"]))
                renamed.clear()
            for key in ("from", "to"):
                if line.startswith(f"rename {key} "):
                    renamed[key] = _clean_header_path(line[len(key) + 8 :]) or ""
            i += 1
    if len(renamed) == 2:
        patches.append(FilePatch("move", renamed["from"], new_path=renamed["to"]))
    if not patches:
        raise PatchError(
            "no file changes found. Expected a unified diff ('--- a/<path>', '+++ b/<path>', "
            "'@@ -l,s +l,s @@' hunks) or a V4A patch ('*** Begin Patch', '*** Update File: <path>', "
            "…, '*** End Patch')."
        )
    return patches


def _is_file_header(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _header_paths(old_raw: str, new_raw: str) -> tuple[str | None, str | None]:
    """Paths from ``---``/``+++`` headers: timestamps, quotes and git's a/ b/ prefixes removed."""
    old, new = _clean_header_path(old_raw), _clean_header_path(new_raw)
    if old != new:
        old = old[2:] if old is not None and old.startswith("a/") else old
        new = new[2:] if new is not None and new.startswith("b/") else new
    return old, new


def _clean_header_path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if len(path) >= 2 and path[0] == path[-1] == '"':
        path = path[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return None if path == "/dev/null" else path


def _unified_file_patch(old: str | None, new: str | None, hunks: list[Hunk], *, rename_declared: bool) -> FilePatch:
    if old is None and new is None:
        raise PatchError("a file header has /dev/null on both sides ('---' and '+++').")
    if old is None:
        assert new is not None
        return FilePatch("create", new, tuple(hunks))
    if new is None:
        return FilePatch("delete", old, tuple(hunks))
    if old != new:
        if not rename_declared:
            raise PatchError(
                f"the file header names two different files ('--- {old}', '+++ {new}'). Use the same "
                "path on both lines to edit a file; to rename one use a V4A '*** Move File: a -> b'."
            )
        return FilePatch("move", old, tuple(hunks), new_path=new)
    if not hunks:
        raise PatchError(f"{new}: the file header is not followed by any '@@' hunk.")
    return FilePatch("update", new, tuple(hunks))


def _read_unified_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    """Read the hunk whose header is ``lines[i]``; return it and the index after it.

    The header's line counts decide where the hunk ends, but models miscount, so lines that
    still look like hunk lines are taken too, and a blank line counts as an empty context line
    (editors strip the lone space) when the hunk continues after it.
    """
    header = lines[i]
    match = _HUNK_HEADER.match(header)
    old_start: int | None = None
    old_left = new_left = 0
    if match:
        old_start = int(match[1])
        old_left = int(match[2]) if match[2] is not None else 1
        new_left = int(match[4]) if match[4] is not None else 1
    elif header.startswith("@@ -"):
        raise PatchError(f"malformed hunk header {header!r}: expected '@@ -<line>,<count> +<line>,<count> @@'.")
    body: list[HunkLine] = []
    i += 1
    while i < len(lines):
        line = lines[i]
        owed = old_left > 0 or new_left > 0
        if line.startswith("\\"):
            if body:
                body[-1] = body[-1].without_newline()
            i += 1
            continue
        if not owed and _ends_hunk(lines, i):
            break
        if line == "":
            if not (owed or _continues_hunk(lines, i + 1)):
                break
            op, text = " ", ""
        elif line[0] in " -+":
            op, text = line[0], line[1:]
        else:
            break
        body.append(HunkLine(op, text))
        if op != "+":
            old_left -= 1
        if op != "-":
            new_left -= 1
        i += 1
    return Hunk(tuple(body), old_start=old_start, header=header.strip()), i


def _ends_hunk(lines: list[str], i: int) -> bool:
    line = lines[i]
    return line.startswith(("@@", "diff ", "Index: ")) or _is_file_header(lines, i)


def _continues_hunk(lines: list[str], j: int) -> bool:
    while j < len(lines) and lines[j] == "":
        j += 1
    return j < len(lines) and lines[j][:1] in (" ", "-", "+") and not _ends_hunk(lines, j)


def _parse_v4a(lines: list[str]) -> list[FilePatch]:
    begin = next((n for n, line in enumerate(lines) if _V4A_BEGIN.match(line)), -1)
    end = next((n for n in range(begin + 1, len(lines)) if _V4A_END.match(lines[n])), len(lines))
    parser = _V4AParser()
    for number in range(begin + 1, end):
        parser.feed(lines[number], number + 1)
    patches = parser.finish()
    if not patches:
        raise PatchError(
            "the V4A patch has no '*** Update File: <path>', '*** Add File: <path>' or "
            "'*** Delete File: <path>' section."
        )
    return patches


_V4A_ACTIONS: dict[str, FileAction] = {"Update": "update", "Add": "create", "Delete": "delete", "Move": "move"}


class _V4AParser:
    """Line-by-line state machine for V4A sections and their hunks."""

    def __init__(self) -> None:
        self.patches: list[FilePatch] = []
        self.action: FileAction | None = None
        self.path = ""
        self.new_path: str | None = None
        self.hunks: list[Hunk] = []
        self.body: list[HunkLine] = []
        self.anchor: str | None = None
        self.blanks = 0  # empty patch lines held back: context inside a hunk, noise at its end

    def feed(self, line: str, number: int) -> None:
        section = _V4A_FILE.match(line)
        if section:
            self._close_section()
            self._open_section(section[1], section[2], number)
        elif _V4A_EOF.match(line):
            return
        elif self.action is None:
            if line.strip():
                raise PatchError(
                    f"patch line {number}: {line!r} is outside any '*** Update File:', "
                    "'*** Add File:' or '*** Delete File:' section."
                )
        elif (move_to := _V4A_MOVE_TO.match(line)) is not None:
            if self.action != "update" or not move_to[1]:
                raise PatchError(f"patch line {number}: '*** Move to:' must follow '*** Update File:'.")
            self.action, self.new_path = "move", move_to[1]
        elif self.action == "delete":
            if line.strip():
                raise PatchError(f"patch line {number}: '*** Delete File: {self.path}' takes no lines.")
        elif self.action == "create":
            self._feed_added(line, number)
        else:
            self._feed_update(line)

    def _open_section(self, kind: str, target: str, number: int) -> None:
        if not target:
            raise PatchError(f"patch line {number}: '*** {kind} File:' needs a path.")
        self.new_path = None
        if kind == "Move":
            source, arrow, destination = target.partition("->")
            if not arrow or not source.strip() or not destination.strip():
                raise PatchError(f"patch line {number}: expected '*** Move File: <from> -> <to>'.")
            target, self.new_path = source.strip(), destination.strip()
        self.action = _V4A_ACTIONS[kind]
        self.path = target

    def _feed_added(self, line: str, number: int) -> None:
        if line.startswith("+"):
            self._take(HunkLine("+", line[1:]))
        elif line == "":
            self.blanks += 1
        elif line.startswith("\\") and self.body:
            self.body[-1] = self.body[-1].without_newline()
        else:
            raise PatchError(
                f"patch line {number}: every line of '*** Add File: {self.path}' must start with '+' (got {line!r})."
            )

    def _feed_update(self, line: str) -> None:
        if line.startswith("@@"):
            self._close_hunk()
            anchor = line[2:].strip()
            anchor = anchor[:-2].strip() if anchor.endswith("@@") else anchor
            self.anchor = anchor or None
        elif line == "":
            self.blanks += 1
        elif line.startswith("\\"):
            if self.body:
                self.body[-1] = self.body[-1].without_newline()
        elif line[0] in "-+ ":
            self._take(HunkLine(line[0], line[1:]))
        else:  # a context line whose leading space was dropped
            self._take(HunkLine(" ", line))

    def _take(self, line: HunkLine) -> None:
        op = "+" if self.action == "create" else " "
        self.body.extend(HunkLine(op, "") for _ in range(self.blanks))
        self.blanks = 0
        self.body.append(line)

    def _close_hunk(self) -> None:
        self.blanks = 0
        if self.body:
            self.hunks.append(Hunk(tuple(self.body), anchor=self.anchor, header=_anchor_header(self.anchor)))
        self.body, self.anchor = [], None

    def _close_section(self) -> None:
        if self.action is None:
            return
        self._close_hunk()
        if self.action == "update" and not any(hunk.changes for hunk in self.hunks):
            raise PatchError(f"'*** Update File: {self.path}' has no '-' or '+' lines.")
        self.patches.append(FilePatch(self.action, self.path, tuple(self.hunks), self.new_path))
        self.action, self.hunks = None, []

    def finish(self) -> list[FilePatch]:
        self._close_section()
        return self.patches


def _anchor_header(anchor: str | None) -> str:
    return f"@@ {anchor}" if anchor else "@@"


# ---------------------------------------------------------------------------------------------
# Applying


def apply_patch(patches: Sequence[FilePatch], originals: Mapping[str, str | None]) -> list[FileEdit]:
    """Apply every file patch, in order, to ``originals`` (path → current text, None = absent).

    ``originals`` must hold every path the patches name. Later sections see earlier sections'
    results, so a V4A patch may touch one file twice. All failures are collected into one
    ``PatchError``; the result lists only files whose text actually changes, in first-seen order.
    """
    current: dict[str, str | None] = {}
    order: list[str] = []
    failures: list[str] = []

    def state(path: str) -> str | None:
        if path not in current:
            current[path] = originals[path]
            order.append(path)
        return current[path]

    for file_patch in patches:
        try:
            _apply_file_patch(file_patch, state, current)
        except PatchError as error:
            failures.append(str(error))
    if failures:
        raise PatchError("\n\n".join(failures))
    return [FileEdit(path, originals[path], current[path]) for path in order if originals[path] != current[path]]


def _apply_file_patch(patch: FilePatch, state: Callable[[str], str | None], current: dict[str, str | None]) -> None:
    old = state(patch.path)
    adds_only = all(not hunk.old_lines for hunk in patch.hunks)
    if patch.action == "create" or (patch.action == "update" and old is None and adds_only):
        if old is not None:
            raise PatchError(
                f"{patch.path}: cannot create the file, it already exists. Patch it as an update "
                "instead ('--- a/<path>' rather than '--- /dev/null', or '*** Update File:')."
            )
        current[patch.path] = apply_hunks(patch.path, "", patch.hunks)
        return
    if old is None:
        raise PatchError(f"{patch.path}: cannot {patch.action} the file, it does not exist.")
    new = apply_hunks(patch.path, old, patch.hunks) if patch.hunks else old
    if patch.action == "delete":
        current[patch.path] = None
    elif patch.action == "move":
        assert patch.new_path is not None
        if patch.new_path != patch.path and state(patch.new_path) is not None:
            raise PatchError(f"{patch.new_path}: cannot move {patch.path} there, the file already exists.")
        current[patch.path] = None
        current[patch.new_path] = new
    else:
        current[patch.path] = new


def apply_hunks(label: str, text: str, hunks: Sequence[Hunk]) -> str:
    """Apply ``hunks`` in order to ``text``; ``label`` names the file in error messages.

    A file without a final newline keeps it that way unless the patch says otherwise with a
    ``\\ No newline at end of file`` marker (models rarely write those markers).
    """
    eol = detect_eol(text)
    explicit_eof = any(not line.newline for hunk in hunks for line in hunk.lines)
    keep_unterminated = bool(text) and not text.endswith("\n") and not explicit_eof
    lines = _split_lines(text)
    cursor = delta = 0
    failures: list[str] = []
    for number, hunk in enumerate(hunks, 1):
        old = hunk.old_lines
        position = _locate(lines, hunk, cursor, delta)
        if position is None:
            failures.append(_hunk_failure(label, number, len(hunks), hunk, lines, delta))
            continue
        replacement: list[tuple[str, str]] = []
        taken = position
        for line in hunk.lines:
            if line.op == "+":
                replacement.append((line.text, eol if line.newline else ""))
            elif line.op == " ":
                replacement.append(lines[taken])
                taken += 1
            else:
                taken += 1
        lines[position : position + len(old)] = replacement
        cursor = position + len(replacement)
        delta += len(replacement) - len(old)
    if failures:
        raise PatchError("\n\n".join(failures))
    result = _join_lines(lines, eol)
    if keep_unterminated and result.endswith("\n"):
        result = result[: -len(eol)] if result.endswith(eol) else result[:-1]
    return result


def _locate(lines: list[tuple[str, str]], hunk: Hunk, cursor: int, delta: int) -> int | None:
    """Index where the hunk's old lines sit in ``lines``, or None when they are nowhere."""
    old = hunk.old_lines
    contents = [content for content, _ in lines]
    if hunk.old_start is not None:
        if not old:  # a pure insertion after line old_start
            return min(max(hunk.old_start + delta, cursor), len(lines))
        return _search_outward(contents, old, hunk.old_start - 1 + delta, cursor, _exact)
    start = cursor
    if hunk.anchor is not None:
        anchored = _find_anchor(contents, hunk.anchor, cursor)
        if anchored is None and not old:
            return None
        if anchored is not None:
            start = anchored if old else anchored + 1
    if not old:
        return len(lines) if hunk.anchor is None else start
    for same in (_exact, _same_rstripped, _same_stripped):
        found = _search_forward(contents, old, start, same)
        if found is None and start > 0:
            found = _search_forward(contents, old, 0, same)
        if found is not None:
            return found
    return None


def _exact(a: str, b: str) -> bool:
    return a == b


def _same_rstripped(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def _same_stripped(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def _matches_at(contents: list[str], old: list[str], at: int, same: Callable[[str, str], bool]) -> bool:
    if at < 0 or at + len(old) > len(contents):
        return False
    return all(same(contents[at + k], line) for k, line in enumerate(old))


def _search_outward(
    contents: list[str], old: list[str], expected: int, floor: int, same: Callable[[str, str], bool]
) -> int | None:
    """Nearest match to ``expected`` at or after ``floor`` (earlier hunks are already applied)."""
    last = len(contents) - len(old)
    expected = min(max(expected, floor), max(last, floor))
    for distance in range(max(expected - floor, last - expected) + 1):
        for at in (expected + distance, expected - distance):
            if floor <= at <= last and _matches_at(contents, old, at, same):
                return at
    return None


def _search_forward(contents: list[str], old: list[str], start: int, same: Callable[[str, str], bool]) -> int | None:
    for at in range(start, len(contents) - len(old) + 1):
        if _matches_at(contents, old, at, same):
            return at
    return None


def _find_anchor(contents: list[str], anchor: str, start: int) -> int | None:
    wanted = anchor.strip()
    for same in (lambda line: line.strip() == wanted, lambda line: wanted in line):
        for at in range(start, len(contents)):
            if same(contents[at]):
                return at
    return None


def _hunk_failure(label: str, number: int, total: int, hunk: Hunk, lines: list[tuple[str, str]], delta: int) -> str:
    contents = [content for content, _ in lines]
    old = hunk.old_lines
    head = f"{label}: hunk {number} of {total} ({hunk.header}) does not apply."
    if not old:
        return f"{head} Its anchor line {hunk.anchor!r} was not found in the file."
    parts = [head]
    where = f" (stated at line {hunk.old_start})" if hunk.old_start is not None else ""
    parts.append(f"Expected these context/removed lines{where}:")
    parts.append(_numbered(old, hunk.old_start))
    if hunk.old_start is not None:
        at = min(max(hunk.old_start - 1 + delta, 0), len(contents))
        actual = contents[at : at + len(old)]
        if actual:
            parts.append(f"The file has at line {at + 1}:")
            parts.append(_numbered(actual, at + 1))
        else:
            parts.append(f"The file has only {len(contents)} lines.")
    candidates = closest_regions(contents, old, limit=1)
    stated = None if hunk.old_start is None else min(max(hunk.old_start + delta, 1), len(contents))
    if candidates and candidates[0].start != stated:
        best = candidates[0]
        note = " — it differs only in whitespace/indentation" if best.whitespace_only else ""
        parts.append(f"Closest text: {_span(best)} ({best.similarity:.0%} similar){note}:")
        parts.append(_numbered(best.lines, best.start))
    parts.append("Re-read the file and regenerate this hunk from its current text.")
    return "\n".join(parts)


def _numbered(lines: Sequence[str], first: int | None) -> str:
    if first is None:
        return "\n".join(f"    |{line}" for line in lines)
    return "\n".join(f"    {first + k}|{line}" for k, line in enumerate(lines))


def _span(candidate: Candidate) -> str:
    last = candidate.start + len(candidate.lines) - 1
    return f"line {candidate.start}" if last == candidate.start else f"lines {candidate.start}–{last}"


# ---------------------------------------------------------------------------------------------
# Line endings


def detect_eol(text: str) -> str:
    """The file's dominant line ending, so added lines match their neighbours."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def split_lines(text: str) -> list[str]:
    """Lines without their endings, numbered as editors and grep number them."""
    return [content for content, _ in _split_lines(text)]


def _split_lines(text: str) -> list[tuple[str, str]]:
    pieces = text.split("\n")
    lines = [(piece[:-1], "\r\n") if piece.endswith("\r") else (piece, "\n") for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append((pieces[-1], ""))
    return lines


def _join_lines(lines: list[tuple[str, str]], eol: str) -> str:
    """Join lines; a line left without an ending inside the file gets one (text was appended after it)."""
    last = len(lines) - 1
    return "".join(content + (ending or (eol if k < last else "")) for k, (content, ending) in enumerate(lines))


# ---------------------------------------------------------------------------------------------
# Exact find-and-replace


@value
class Replacement:
    text: str
    count: int


def replace_text(label: str, text: str, old: str, new: str, *, replace_all: bool = False) -> Replacement:
    """Replace the exact ``old`` by ``new`` in ``text``: once, or everywhere with ``replace_all``.

    A CRLF file is matched with the model's LF strings converted, and keeps CRLF.
    """
    if not old:
        raise PatchError("old_string is empty. To create or overwrite a whole file use write_file.")
    if old == new:
        raise PatchError("old_string and new_string are identical; there is nothing to change.")
    if detect_eol(text) == "\r\n" and "\r" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise PatchError(_not_found_message(label, text, old))
    if count > 1 and not replace_all:
        starts = _occurrence_lines(text, old)
        shown = ", ".join(str(line) for line in starts[:20]) + (", …" if len(starts) > 20 else "")
        raise PatchError(
            f"old_string occurs {count} times in {label} (lines {shown}). Include more surrounding "
            "lines to make it unique, or set replace_all=true to replace every occurrence."
        )
    return Replacement(text.replace(old, new) if replace_all else text.replace(old, new, 1), count)


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    at = text.find(needle)
    while at != -1:
        lines.append(text.count("\n", 0, at) + 1)
        at = text.find(needle, at + len(needle))
    return lines


def _not_found_message(label: str, text: str, old: str) -> str:
    parts = [f"old_string was not found in {label}."]
    spaced = whitespace_insensitive_find(text, old)
    if spaced is not None:
        parts.append(
            f"It matches the text at line {text.count(chr(10), 0, spaced) + 1} except for whitespace "
            "(indentation, tabs vs spaces, trailing spaces or line breaks). Copy the exact text."
        )
    candidates = closest_regions(split_lines(text), split_lines(old.replace("\r\n", "\n")))
    if candidates:
        parts.append("Closest matches in the file:")
        for candidate in candidates:
            parts.append(f"  {_span(candidate)} ({candidate.similarity:.0%} similar):")
            parts.append(_numbered(candidate.lines, candidate.start))
    parts.append("Re-read the file with read_file and copy old_string exactly, including indentation.")
    return "\n".join(parts)


def whitespace_insensitive_find(text: str, needle: str) -> int | None:
    """Offset where ``needle`` occurs in ``text`` if whitespace is ignored, else None."""
    visible = [char for char in needle if not char.isspace()]
    if not visible or len(visible) > 20_000:
        return None
    pattern = re.compile(r"\s*".join(re.escape(char) for char in visible))
    found = pattern.search(text)
    return None if found is None else found.start()


# ---------------------------------------------------------------------------------------------
# Fuzzy search


def closest_regions(
    haystack: Sequence[str], needle: Sequence[str], *, limit: int = 3, threshold: float = 0.5
) -> list[Candidate]:
    """The ``limit`` windows of ``haystack`` most similar to ``needle``, best first.

    Scoring every window with difflib would be quadratic on big files, so windows are only
    scored where they align a line equal (ignoring whitespace) or close to a needle line.
    """
    needle = list(needle)
    while needle and not needle[-1].strip():
        needle.pop()
    if not needle or not haystack:
        return []
    size = min(len(needle), len(haystack))
    last_start = len(haystack) - size
    starts = _seed_starts(haystack, needle, last_start)
    target = "\n".join(needle)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    scored: list[tuple[float, int]] = []
    for start in starts:
        matcher.set_seq1("\n".join(haystack[start : start + size]))
        if matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold:
            ratio = matcher.ratio()
            if ratio >= threshold:
                scored.append((ratio, start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[Candidate] = []
    for ratio, start in scored:
        if any(abs(start - other.start + 1) < size for other in chosen):
            continue
        window = tuple(haystack[start : start + size])
        same_words = [_squash(line) for line in window] == [_squash(line) for line in needle[:size]]
        chosen.append(Candidate(start + 1, window, ratio, same_words))
        if len(chosen) == limit:
            break
    return chosen


def _squash(line: str) -> str:
    return "".join(line.split())


_MAX_SEEDS = 400


def _seed_starts(haystack: Sequence[str], needle: Sequence[str], last_start: int) -> list[int]:
    """Window starts worth scoring, most promising first."""
    votes: dict[int, int] = {}
    positions: dict[str, list[int]] = {}
    for k, line in enumerate(needle):
        key = _squash(line)
        if key:
            positions.setdefault(key, []).append(k)
    for at, line in enumerate(haystack):
        for k in positions.get(_squash(line), ()):
            start = min(max(at - k, 0), last_start)
            votes[start] = votes.get(start, 0) + 2
    longest = max(range(len(needle)), key=lambda k: len(needle[k].strip()))
    key = needle[longest].strip()
    if key:
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(key)
        for at, line in enumerate(haystack):
            matcher.set_seq1(line.strip())
            if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6 and matcher.ratio() >= 0.6:
                start = min(max(at - longest, 0), last_start)
                votes[start] = votes.get(start, 0) + 1
    ranked = sorted(votes, key=lambda start: (-votes[start], start))
    return ranked[:_MAX_SEEDS]


# ---------------------------------------------------------------------------------------------
# Summaries


def first_changed_line(old: str | None, new: str | None) -> int:
    """1-based number of the first line that differs between ``old`` and ``new``."""
    before, after = split_lines(old or ""), split_lines(new or "")
    for number, (a, b) in enumerate(zip(before, after, strict=False), 1):
        if a != b:
            return number
    return min(len(before), len(after)) + 1 if len(before) != len(after) else 1


def line_changes(old: str | None, new: str | None) -> tuple[int, int]:
    """(added, removed) line counts for a summary: lines gained and lost, ignoring moves.

    A multiset difference rather than a real diff, so it stays linear on big rewrites.
    """
    before, after = Counter(split_lines(old or "")), Counter(split_lines(new or ""))
    return sum((after - before).values()), sum((before - after).values())
