"""The file tools: ``read_file``, ``write_file``, ``patch`` and ``search_files``.

They keep Hermes's names and arguments so prompts and skills written for Hermes work unchanged.
Every path resolves against the session's cwd (never the process's), reads go through the
editor so unsaved buffers are seen, and every change is shown to the gate as whole-file old and
new text before anything is written.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio

from acp_hermes_memory.text import SNIFF_BYTES, looks_binary, one_line
from acp_hermes_memory.values import value
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import DiffDisplay, Display, FileChange, Location, TextDisplay
from acp_hermes_tools.diffs import (
    FileEdit,
    PatchError,
    apply_patch,
    first_changed_line,
    line_changes,
    parse_patch,
    replace_text,
    split_lines,
)
from acp_hermes_tools.paths import resolve_path
from acp_hermes_tools.registry import MAX_RESULT_CHARS, Access, Guidance, Presentation, Tool, ToolError, ToolResult
from acp_hermes_tools.search import SearchError, SearchRequest, display_path, run_search, similar_paths

DEFAULT_READ_LIMIT = 500
MAX_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = MAX_RESULT_CHARS - 4_000  # stay under the registry's cap, which would cut mid-file
STREAM_READ_BYTES = 16 * 1024 * 1024  # bigger files are paged straight from disk
_TITLE_PATTERN_CHARS = 60

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "jsx", ".ts": "typescript", ".tsx": "tsx", ".json": "json", ".jsonc": "jsonc",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".md": "markdown",
    ".rst": "rst", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss", ".xml": "xml",
    ".svg": "xml", ".sh": "bash", ".bash": "bash", ".zsh": "zsh", ".fish": "fish", ".ps1": "powershell",
    ".rs": "rust", ".go": "go", ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp",
    ".rb": "ruby", ".php": "php", ".lua": "lua", ".pl": "perl", ".r": "r", ".scala": "scala",
    ".sql": "sql", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell", ".ml": "ocaml",
    ".clj": "clojure", ".el": "elisp", ".vim": "vim", ".dart": "dart", ".zig": "zig", ".nix": "nix",
    ".tf": "hcl", ".proto": "protobuf", ".graphql": "graphql", ".vue": "vue", ".svelte": "svelte",
    ".diff": "diff", ".patch": "diff", ".dockerfile": "dockerfile",
}  # fmt: skip
_NAMED_LANGUAGES = {"Dockerfile": "dockerfile", "Makefile": "makefile", "CMakeLists.txt": "cmake"}

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also .docx, .xlsx, .jar, .whl)"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\0", "SQLite database"),
    (b"\0asm", "WebAssembly module"),
    (b"RIFF", "RIFF media (WAV, WebP, AVI)"),
)


def language_for(path: Path) -> str:
    """The Markdown fence language for a file, or "" when unknown."""
    return _NAMED_LANGUAGES.get(path.name) or LANGUAGES.get(path.suffix.lower(), "")


def _shown(raw: str, cwd: Path) -> str:
    return display_path(resolve_path(raw, cwd), cwd)


# ---------------------------------------------------------------------------------------------
# What is on disk


@value
class _OnDisk:
    kind: Literal["missing", "directory", "file", "other"]
    size: int = 0
    sample: bytes = b""


def _inspect(path: Path) -> _OnDisk:
    if not path.exists():
        return _OnDisk("missing")
    if path.is_dir():
        return _OnDisk("directory")
    if not path.is_file():
        return _OnDisk("other")
    with path.open("rb") as handle:
        sample = handle.read(SNIFF_BYTES)
    return _OnDisk("file", path.stat().st_size, sample)


def _binary_kind(path: Path, sample: bytes) -> str:
    for magic, kind in _MAGIC:
        if sample.startswith(magic):
            return kind
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "binary data"


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


async def _missing_file_error(path: Path, ctx: ToolContext) -> ToolError:
    shown = display_path(path, ctx.cwd)
    suggestions = await anyio.to_thread.run_sync(similar_paths, path, ctx.roots)
    if suggestions:
        listed = "\n".join(f"  {display_path(candidate, ctx.cwd)}" for candidate in suggestions)
        return ToolError(f"{shown} does not exist. Did you mean one of these?\n{listed}")
    return ToolError(f"{shown} does not exist. Use search_files with target='files' to find the file.")


def _directory_error(path: Path, ctx: ToolContext) -> ToolError:
    shown = display_path(path, ctx.cwd)
    try:
        entries = sorted(os.scandir(path), key=lambda entry: entry.name)
    except OSError:
        entries = []
    names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries[:20]]
    more = f" … and {len(entries) - 20} more" if len(entries) > 20 else ""
    listing = f" It contains: {', '.join(names)}{more}." if names else " It is empty."
    return ToolError(
        f"{shown} is a directory, not a file.{listing} Read one of its files, or use search_files "
        "with target='files' to find files."
    )


async def _require_file(found: _OnDisk, path: Path, ctx: ToolContext) -> None:
    """Raise the error that fits when ``path`` is not a regular file."""
    if found.kind == "missing":
        raise await _missing_file_error(path, ctx)
    if found.kind == "directory":
        raise _directory_error(path, ctx)
    if found.kind == "other":
        raise ToolError(f"{display_path(path, ctx.cwd)} is not a regular file (a device, socket or pipe).")


async def _existing_text(path: Path, ctx: ToolContext) -> str:
    """Current text of a file that must exist, with helpful errors when it does not."""
    await _require_file(await anyio.to_thread.run_sync(_inspect, path), path, ctx)
    return await ctx.read_text(path, "edit")


# ---------------------------------------------------------------------------------------------
# read_file


READ_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "File to read: absolute, relative to the working directory, or ~/path.",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "Line number to start reading from (1-indexed, default: 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_READ_LIMIT,
            "default": DEFAULT_READ_LIMIT,
            "description": f"Maximum number of lines to read (default: {DEFAULT_READ_LIMIT}, max: {MAX_READ_LIMIT}).",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

READ_FILE_DESCRIPTION = (
    "Read a text file with line numbers. Use this instead of cat/head/tail in the terminal. "
    "Output format: 'LINE_NUMBER|CONTENT' (the number and '|' are not part of the file). Reads "
    f"{DEFAULT_READ_LIMIT} lines by default; for large files page with offset and limit — when "
    "more lines remain the output ends with the offset to continue from. Very long lines are cut. "
    "Sees unsaved editor changes. Suggests similar file names when the path does not exist. "
    "Cannot show binary files (images, archives, executables)."
)


@value
class _Window:
    lines: list[str]  # the lines shown, already capped
    first: int
    total: int
    capped_output: bool  # stopped early because of MAX_READ_CHARS


def _cap_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line) - MAX_LINE_CHARS:,} more characters]"


def _window(all_lines: Sequence[str], total: int, offset: int, limit: int) -> _Window:
    """Lines ``offset``… of a file (``all_lines`` starts at ``offset``), within the char budget."""
    shown: list[str] = []
    used = 0
    for line in all_lines[:limit]:
        capped = _cap_line(line)
        if shown and used + len(capped) > MAX_READ_CHARS:
            return _Window(shown, offset, total, capped_output=True)
        shown.append(capped)
        used += len(capped) + 8
    return _Window(shown, offset, total, capped_output=False)


def _stream_window(path: Path, offset: int, limit: int) -> _Window:
    """Page a huge file from disk without loading it (blocking: run it in a thread)."""
    wanted: list[str] = []
    total = 0
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        for line in handle:
            total += 1
            if offset <= total < offset + limit:
                wanted.append(line.rstrip("\n").removesuffix("\r"))
    return _window(wanted, total, offset, limit)


async def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = ctx.resolve(args["path"])
    await ctx.authorize_read((path,))  # before anything about the file is told, large files included
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", DEFAULT_READ_LIMIT))
    shown = display_path(path, ctx.cwd)
    found = await anyio.to_thread.run_sync(_inspect, path)
    await _require_file(found, path, ctx)
    if looks_binary(found.sample):
        raise ToolError(
            f"{shown} is a binary file ({_binary_kind(path, found.sample)}, {_human_size(found.size)}); "
            "read_file only shows text."
        )
    if found.size > STREAM_READ_BYTES:
        window = await anyio.to_thread.run_sync(_stream_window, path, offset, limit)
    else:
        text = await ctx.read_text(path)
        if not text:
            return ToolResult(f"{shown} is empty (0 bytes).", locations=(Location(str(path)),))
        lines = split_lines(text)
        window = _window(lines[offset - 1 :], len(lines), offset, limit)
    if offset > window.total:
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {window.total} lines. Use a smaller offset."
        )
    last = window.first + len(window.lines) - 1
    numbered = [f"{window.first + k}|{line}" for k, line in enumerate(window.lines)]
    if last < window.total:
        why = " (output size limit reached)" if window.capped_output else ""
        numbered.append(
            f"\n[Showing lines {window.first}–{last} of {window.total}{why}. Continue with offset={last + 1}.]"
        )
    return ToolResult(
        "\n".join(numbered),
        display=(TextDisplay("\n".join(window.lines), fence=language_for(path)),),
        locations=(Location(str(path), window.first),),
    )


def present_read(args: dict[str, Any], scope: ToolScope) -> Presentation:
    cwd = scope.cwd
    raw = str(args.get("path", ""))
    path = resolve_path(raw, cwd)
    offset = int(args.get("offset", 1))
    title = f"Read {display_path(path, cwd)}"
    if "offset" in args or "limit" in args:
        last = offset + int(args.get("limit", DEFAULT_READ_LIMIT)) - 1
        title += f" (line {offset})" if last == offset else f" (lines {offset}–{last})"
    return Presentation(title, (Location(str(path), offset),))


# ---------------------------------------------------------------------------------------------
# write_file


WRITE_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "File to write (created if missing, overwritten if it exists).",
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}

WRITE_FILE_DESCRIPTION = (
    "Write content to a file, completely replacing what it held. Use this instead of echo or "
    "heredocs in the terminal. Creates the file and its parent directories if needed. It "
    "OVERWRITES the whole file — use 'patch' for targeted edits of an existing file."
)


def _size(text: str) -> str:
    count = len(split_lines(text))
    return f"{count} line{'s' if count != 1 else ''}, {_human_size(len(text.encode('utf-8')))}"


async def write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = ctx.resolve(args["path"])
    content: str = args["content"]
    shown = display_path(path, ctx.cwd)
    found = await anyio.to_thread.run_sync(_inspect, path)
    if found.kind == "directory":
        raise ToolError(f"{shown} is a directory; give the path of a file inside it.")
    if found.kind == "other":
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe).")
    old = await ctx.read_text(path, "edit") if found.kind == "file" else None
    if old == content:
        return ToolResult(f"{shown} already has exactly this content; nothing was written.")
    await ctx.authorize_edits([FileChange(path, old, content)])
    await ctx.write_text(path, content)
    if old is None:
        summary = f"Created {shown} ({_size(content)})."
    else:
        added, removed = line_changes(old, content)
        summary = f"Overwrote {shown} ({_size(content)}; +{added} −{removed} lines)."
    return ToolResult(
        summary,
        display=(DiffDisplay(str(path), old, content),),
        locations=(Location(str(path), first_changed_line(old, content)),),
    )


def present_write(args: dict[str, Any], scope: ToolScope) -> Presentation:
    cwd = scope.cwd
    path = resolve_path(str(args.get("path", "")), cwd)
    return Presentation(f"Write {display_path(path, cwd)}", (Location(str(path)),))


# ---------------------------------------------------------------------------------------------
# patch


PATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "mode": {
            "type": "string",
            "enum": ["replace", "patch"],
            "default": "replace",
            "description": "'replace': needs path, old_string and new_string. 'patch': needs patch only.",
        },
        "path": {"type": "string", "minLength": 1, "description": "mode='replace': the file to edit."},
        "old_string": {
            "type": "string",
            "description": (
                "mode='replace': the exact text to find, including indentation. It must occur exactly "
                "once unless replace_all is true; include surrounding lines to make it unique."
            ),
        },
        "new_string": {
            "type": "string",
            "description": "mode='replace': the replacement text ('' deletes the matched text).",
        },
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "mode='replace': replace every occurrence instead of requiring one (default: false).",
        },
        "patch": {
            "type": "string",
            "description": (
                "mode='patch': a unified diff (--- a/path, +++ b/path, @@ -l,s +l,s @@ hunks; /dev/null "
                "to create or delete a file) or a V4A patch:\n*** Begin Patch\n*** Update File: "
                "path/to/file\n@@ context line\n context\n-removed\n+added\n*** Add File: new/file\n+line\n"
                "*** Delete File: old/file\n*** End Patch"
            ),
        },
    },
    "required": ["mode"],
    "additionalProperties": False,
}

PATCH_DESCRIPTION = (
    "Make targeted edits to files. Use this instead of sed/awk in the terminal.\n\n"
    "REPLACE MODE (mode='replace'): replace the exact text old_string with new_string in path. "
    "old_string must match the file exactly (whitespace included) and be unique unless "
    "replace_all=true; when it does not match, the error shows the closest text in the file.\n"
    "PATCH MODE (mode='patch'): apply a unified diff or a V4A patch that may touch several files, "
    "create files and delete them. Hunks must match the current text, though they may sit at other "
    "line numbers than stated. Either every file is changed or none is.\n"
    "Paths are relative to the working directory. The user sees and may refuse the change."
)


async def patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if args.get("mode", "replace") == "replace":
        return await _replace(args, ctx)
    return await _apply_patch(args, ctx)


async def _replace(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    missing = [name for name in ("path", "old_string", "new_string") if args.get(name) is None]
    if missing:
        raise ToolError(f"mode='replace' needs {', '.join(missing)} (or use mode='patch' with a patch).")
    path = ctx.resolve(args["path"])
    shown = display_path(path, ctx.cwd)
    old = await _existing_text(path, ctx)
    replace_all = bool(args.get("replace_all"))
    try:  # in a thread: on a miss the fuzzy search for candidates can take a while on big files
        result = await anyio.to_thread.run_sync(
            partial(replace_text, shown, old, args["old_string"], args["new_string"], replace_all=replace_all)
        )
    except PatchError as error:
        raise ToolError(str(error)) from None
    await ctx.authorize_edits([FileChange(path, old, result.text)])
    await ctx.write_text(path, result.text)
    added, removed = line_changes(old, result.text)
    times = "1 occurrence" if result.count == 1 else f"{result.count} occurrences"
    return ToolResult(
        f"Edited {shown}: replaced {times} (+{added} −{removed} lines).",
        display=(DiffDisplay(str(path), old, result.text),),
        locations=(Location(str(path), first_changed_line(old, result.text)),),
    )


async def _apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text = args.get("patch")
    if not text:
        raise ToolError("mode='patch' needs the patch text in 'patch'.")
    try:
        # Paths become their display form: unique per file and readable in error messages.
        parsed = [item.with_paths(lambda raw: _shown(raw, ctx.cwd)) for item in parse_patch(text)]
        originals = {name: await _current_text(name, ctx) for item in parsed for name in item.paths}
        edits = await anyio.to_thread.run_sync(apply_patch, parsed, originals)
    except PatchError as error:
        raise ToolError(f"{error}\nNo file was changed.") from None
    if not edits:
        raise ToolError("the patch makes no changes: every file already has the patched text.")
    changes = [FileChange(ctx.resolve(edit.path), edit.old_text, edit.new_text) for edit in edits]
    await ctx.authorize_edits(changes)
    for change in changes:
        if change.new_text is None:
            await ctx.delete_file(change.path)
        else:
            await ctx.write_text(change.path, change.new_text)
    return _patch_result(edits, changes)


async def _current_text(name: str, ctx: ToolContext) -> str | None:
    path = ctx.resolve(name)
    found = await anyio.to_thread.run_sync(_inspect, path)
    if found.kind == "missing":
        return None
    if found.kind != "file":
        raise PatchError(f"{name}: not a regular file.")
    return await ctx.read_text(path, "edit")


def _patch_result(edits: Sequence[FileEdit], changes: Sequence[FileChange]) -> ToolResult:
    summary: list[str] = []
    display: list[Display] = []
    locations: list[Location] = []
    for edit, change in zip(edits, changes, strict=True):
        added, removed = line_changes(edit.old_text, edit.new_text)
        path = str(change.path)
        if edit.new_text is None:
            summary.append(f"  D {edit.path} (−{removed})")
            display += [DiffDisplay(path, edit.old_text, ""), TextDisplay(f"Deleted {edit.path}")]
            continue
        letter = "A" if edit.old_text is None else "M"
        summary.append(f"  {letter} {edit.path} (+{added} −{removed})")
        display.append(DiffDisplay(path, edit.old_text, edit.new_text))
        locations.append(Location(path, first_changed_line(edit.old_text, edit.new_text)))
    count = "1 file" if len(edits) == 1 else f"{len(edits)} files"
    return ToolResult("\n".join([f"Patched {count}:", *summary]), display=tuple(display), locations=tuple(locations))


def present_patch(args: dict[str, Any], scope: ToolScope) -> Presentation:
    cwd = scope.cwd
    if args.get("mode", "replace") == "replace":
        path = resolve_path(str(args.get("path", "")), cwd)
        return Presentation(f"Edit {display_path(path, cwd)}", (Location(str(path)),))
    try:
        parsed = parse_patch(str(args.get("patch", "")))
    except PatchError:
        return Presentation("Edit files")
    targets: dict[Path, int | None] = {}
    for item in parsed:
        line = next((hunk.old_start for hunk in item.hunks if hunk.old_start), None)
        for raw in item.paths:
            targets.setdefault(resolve_path(raw, cwd), line if raw == item.path else None)
    locations = tuple(Location(str(path), line) for path, line in targets.items())
    if len(targets) == 1:
        return Presentation(f"Edit {display_path(next(iter(targets)), cwd)}", locations)
    return Presentation(f"Edit {len(targets)} files", locations)


# ---------------------------------------------------------------------------------------------
# search_files


SEARCH_FILES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": (
                "target='content': a regular expression searched in file contents. target='files': a "
                "glob such as '*.py' or '**/test_*.py', or a plain substring of the file name."
            ),
        },
        "target": {
            "type": "string",
            "enum": ["content", "files"],
            "default": "content",
            "description": "'content' searches inside files; 'files' finds files by name.",
        },
        "path": {
            "type": "string",
            "default": ".",
            "description": "Directory (or single file) to search (default: the working directory).",
        },
        "file_glob": {
            "type": "string",
            "description": "target='content': only search files matching this glob, e.g. '*.py'.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000,
            "default": 50,
            "description": "Maximum number of results to return (default: 50).",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Skip this many results, to page through them (default: 0).",
        },
        "output_mode": {
            "type": "string",
            "enum": ["content", "files_with_matches", "files_only", "count"],
            "default": "content",
            "description": (
                "target='content': 'content' shows matching lines as path:line:text; "
                "'files_with_matches' (alias 'files_only') lists the files; 'count' gives matches per file."
            ),
        },
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 20,
            "default": 0,
            "description": "target='content', output_mode='content': lines of context around each match.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

SEARCH_FILES_DESCRIPTION = (
    "Search file contents or find files by name. Use this instead of grep/rg/find/ls in the terminal. "
    "Honours .gitignore and skips binary files.\n\n"
    "Content search (target='content'): regex search inside files; results are sorted by path and "
    "line. output_mode 'content' shows 'path:line:text' (context lines as 'path-line-text'), "
    "'files_with_matches' lists file paths, 'count' shows matches per file.\n"
    "File search (target='files'): find files by glob ('*.py', 'src/**/test_*.py') or name substring.\n"
    "Results are paged with offset/limit; the output says how to get the next page."
)


async def search_files(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    mode = args.get("output_mode", "content")
    request = SearchRequest(
        pattern=args["pattern"],
        root=ctx.resolve(args.get("path") or "."),
        target=args.get("target", "content"),
        file_glob=args.get("file_glob") or None,
        output_mode="files_with_matches" if mode == "files_only" else mode,
        context=int(args.get("context", 0)),
        limit=int(args.get("limit", 50)),
        offset=int(args.get("offset", 0)),
    )
    await ctx.authorize_read((request.root,), "directory")
    try:
        links = ctx.scope.secret_links
        page = await run_search(request, ctx.cwd, secret_behind=links.secret_behind if links is not None else None)
    except SearchError as error:
        raise ToolError(str(error)) from None
    return ToolResult(page.text, display=(TextDisplay(page.text, fence=""),), locations=page.locations)


def present_search(args: dict[str, Any], scope: ToolScope) -> Presentation:
    cwd = scope.cwd
    pattern = one_line(str(args.get("pattern", "")), _TITLE_PATTERN_CHARS)
    root = resolve_path(str(args.get("path") or "."), cwd)
    by_name = args.get("target", "content") == "files"
    title = f'Find files "{pattern}"' if by_name else f'Search "{pattern}"'
    if root != cwd:
        title += f" in {display_path(root, cwd)}"
    if args.get("file_glob") and not by_name:
        title += f" ({args['file_glob']})"
    locations = (Location(str(root)),) if root.is_file() else ()
    return Presentation(title, locations)


READ_FILE, WRITE_FILE, PATCH, SEARCH_FILES = "read_file", "write_file", "patch", "search_files"


def _patch_guidance(present: frozenset[str]) -> str:
    rewrite = f" Use `{WRITE_FILE}` only for new files or full rewrites." if WRITE_FILE in present else ""
    return f"Prefer `{PATCH}` for small, targeted edits.{rewrite}"


def _write_guidance(present: frozenset[str]) -> str | None:
    return None if PATCH in present else f"Use `{WRITE_FILE}` to create or rewrite files."  # else patch's says it


FILE_TOOLS: list[Tool] = [
    Tool(
        name=READ_FILE,
        description=READ_FILE_DESCRIPTION,
        schema=READ_FILE_SCHEMA,
        handler=read_file,
        kind="read",
        access=Access.READ,
        parallel_safe=True,
        present=present_read,
        guidance=Guidance(10, f"Read a file with `{READ_FILE}` before you edit it; never edit from memory."),
        toolsets=("file",),
        claude_names=("Read",),
    ),
    Tool(
        name=WRITE_FILE,
        description=WRITE_FILE_DESCRIPTION,
        schema=WRITE_FILE_SCHEMA,
        handler=write_file,
        kind="edit",
        access=Access.EDIT,
        present=present_write,
        guidance=Guidance(30, _write_guidance, previewed=True),
        toolsets=("file",),
        claude_names=("Write",),
    ),
    Tool(
        name=PATCH,
        description=PATCH_DESCRIPTION,
        schema=PATCH_SCHEMA,
        handler=patch,
        kind="edit",
        access=Access.EDIT,
        present=present_patch,
        guidance=Guidance(30, _patch_guidance, previewed=True),
        toolsets=("file",),
        claude_names=("Edit", "MultiEdit"),
    ),
    Tool(
        name=SEARCH_FILES,
        description=SEARCH_FILES_DESCRIPTION,
        schema=SEARCH_FILES_SCHEMA,
        handler=search_files,
        kind="search",
        access=Access.READ,
        parallel_safe=True,
        present=present_search,
        guidance=Guidance(20, f"Find code with `{SEARCH_FILES}` instead of guessing paths or names."),
        toolsets=("search",),
        claude_names=("Grep", "Glob"),
    ),
]
