"""The engine behind ``search_files``: ripgrep when it is installed, a pure-Python walk otherwise.

Both engines produce the same values (absolute paths, sorted by path then line) and both honour
``.gitignore``, so what the model sees does not depend on which one ran. Subprocesses run
through anyio and the Python walk runs in a worker thread, so a search never blocks the loop.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncGenerator, Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc

from acp_hermes_memory.text import looks_binary
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import Location
from acp_hermes_tools.paths import is_within
from acp_hermes_tools.safe_git import git_command
from acp_hermes_tools.sensitive_paths import sensitive_path_reason

Engine = Literal["auto", "ripgrep", "python"]
Target = Literal["content", "files"]
OutputMode = Literal["content", "files_with_matches", "count"]

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})
MAX_MATCHES = 5_000  # matching lines collected before a search stops; pages are cut from these
MAX_LINE_CHARS = 500
MAX_LOCATIONS = 20


class SearchError(Exception):
    """The search could not run (bad pattern, missing path); the message is for the model."""


@value
class LineHit:
    line: int  # 1-based
    text: str
    matched: bool  # False for a context line


@value
class FileHits:
    path: Path
    lines: tuple[LineHit, ...]  # matches and their context, by line

    @property
    def matches(self) -> int:
        return sum(hit.matched for hit in self.lines)


@value
class ContentResults:
    files: tuple[FileHits, ...]
    truncated: bool = False  # stopped at MAX_MATCHES matching lines


@value
class SearchRequest:
    pattern: str
    root: Path  # absolute: a directory, or one file
    target: Target = "content"
    file_glob: str | None = None
    output_mode: OutputMode = "content"
    context: int = 0
    limit: int = 50
    offset: int = 0


@value
class SearchPage:
    text: str
    locations: tuple[Location, ...]
    total: int


def ripgrep_path() -> str | None:
    return shutil.which("rg")


def display_path(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when inside it (shorter for the model), else absolute."""
    if path == base:
        return "."
    if is_within(path, (base,)):
        return path.relative_to(base).as_posix()
    return str(path)


async def run_search(request: SearchRequest, base: Path, *, engine: Engine = "auto",
                     secret_behind: Callable[[Path], Path | None] | None = None) -> SearchPage:
    """Run ``request`` and render one page of results with paths relative to ``base``;
    ``secret_behind`` (blocking) names the secret file a path is a hard link to, if any."""
    if not request.root.exists():
        raise SearchError(f"the search path {display_path(request.root, base)} does not exist.")
    if request.target == "files":
        files = await list_files(request.root, engine=engine)
        return format_files_page(find_by_name(files, request.pattern, request.root), request, base)
    results = await search_content(
        request.root, request.pattern, file_glob=request.file_glob, context=request.context, engine=engine
    )
    results, withheld = _without_secrets(results, request.root)
    if secret_behind is not None and results.files:
        results, linked = await anyio.to_thread.run_sync(_without_links, results, request.root, secret_behind)
        withheld += linked
    page = format_content_page(results, request, base)
    if not withheld:
        return page
    note = (f"\n[{withheld} matching file(s) that may hold secrets (keys, credentials, .env) were left out; "
            "read_file asks the user before reading one.]")
    return SearchPage(page.text + note, page.locations, page.total)


def _without_secrets(results: ContentResults, root: Path) -> tuple[ContentResults, int]:
    """Drop matches in files that hold secrets, unless the search was aimed at that very file
    (reading it was then asked for as such)."""
    home = Path.home()
    kept = tuple(hits for hits in results.files if hits.path == root or not sensitive_path_reason(hits.path, home))
    return ContentResults(kept, results.truncated), len(results.files) - len(kept)


def _without_links(results: ContentResults, root: Path,
                   secret_behind: Callable[[Path], Path | None]) -> tuple[ContentResults, int]:
    """Drop matches in hard links to secret files, as ``_without_secrets`` drops the secrets."""
    kept = tuple(hits for hits in results.files if hits.path == root or secret_behind(hits.path) is None)
    return ContentResults(kept, results.truncated), len(results.files) - len(kept)


# ---------------------------------------------------------------------------------------------
# Engines


def _use_ripgrep(engine: Engine) -> str | None:
    if engine == "python":
        return None
    found = ripgrep_path()
    if found is None and engine == "ripgrep":
        raise SearchError("ripgrep (rg) is not installed.")
    return found


async def search_content(
    root: Path, pattern: str, *, file_glob: str | None = None, context: int = 0, engine: Engine = "auto"
) -> ContentResults:
    """Lines matching the regex ``pattern`` under ``root`` (plus ``context`` lines around)."""
    rg = _use_ripgrep(engine)
    if rg is not None:
        return await _ripgrep_content(rg, root, pattern, file_glob, context)
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise SearchError(_bad_regex(pattern, str(error))) from None
    files = await _python_files(root)
    if file_glob:
        matcher = _glob_matcher(file_glob)
        files = [path for path in files if matcher(_relative(path, root))]
    return await anyio.to_thread.run_sync(_python_content, files, regex, context)


async def list_files(root: Path, *, engine: Engine = "auto") -> list[Path]:
    """Every searchable file under ``root`` (ignore rules applied), sorted."""
    rg = _use_ripgrep(engine)
    if rg is None:
        return await _python_files(root)
    directory, target = _ripgrep_scope(root)
    command = [rg, "--files", *await _ripgrep_filters(directory), "--", target]
    result = await anyio.run_process(command, cwd=directory, check=False, stdin=subprocess.DEVNULL)
    if result.returncode not in (0, 1):
        raise SearchError(f"ripgrep failed: {result.stderr.decode(errors='replace').strip()}")
    found = (_ripgrep_path(directory, raw) for raw in result.stdout.splitlines() if raw)
    return sorted((path for path in found if not _in_skipped_dir(path, root)), key=str)


def _ripgrep_scope(root: Path) -> tuple[Path, str]:
    """Run ripgrep inside the search root so its globs are relative to it, as ours are."""
    return (root.parent, root.name) if root.is_file() else (root, ".")


def _ripgrep_path(directory: Path, raw: bytes) -> Path:
    return Path(os.path.normpath(directory / os.fsdecode(raw)))


def _bad_regex(pattern: str, detail: str) -> str:
    return (
        f"invalid regular expression {pattern!r}: {detail}. Escape special characters such as "
        "( ) [ ] { } . * + ? | with a backslash to search for them literally."
    )


async def _ripgrep_filters(directory: Path) -> list[str]:
    """Arguments that make ripgrep choose the files the Python fallback chooses: hidden files
    count inside a git work tree (as ``git ls-files`` lists them) and are skipped outside one."""
    excludes = [arg for name in sorted(SKIP_DIRS) for arg in ("--glob", f"!{name}")]
    hidden = ["--hidden"] if await _in_git_work_tree(directory) else []
    return [*hidden, "--no-require-git", "--no-config", *excludes]


async def _in_git_work_tree(directory: Path) -> bool:
    git = shutil.which("git")
    if git is None:
        return False
    command = git_command(git, "rev-parse", "--is-inside-work-tree", directory=str(directory))
    result = await anyio.run_process(command.argv, check=False, stdin=subprocess.DEVNULL, env=command.env)
    return result.returncode == 0 and result.stdout.strip() == b"true"


async def _ripgrep_content(rg: str, root: Path, pattern: str, file_glob: str | None, context: int) -> ContentResults:
    directory, target = _ripgrep_scope(root)
    args = [rg, "--json", *await _ripgrep_filters(directory)]
    if context:
        args += ["--context", str(context)]
    if file_glob:
        args += ["--glob", file_glob]
    args += ["--regexp", pattern, "--", target]
    collected = _Collected()
    errors = bytearray()
    async with await anyio.open_process(args, cwd=directory, stdin=subprocess.DEVNULL) as process:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, process.stderr, errors)
            async with contextlib.aclosing(_lines(process.stdout)) as messages:
                async for message in messages:
                    hit = _parse_ripgrep_line(directory, message)
                    if hit is not None and collected.add(*hit):
                        process.kill()
                        break
        code = await process.wait()
    if code == 2 and not collected.lines and not collected.truncated:
        detail = errors.decode(errors="replace").strip()
        if "regex" in detail:
            raise SearchError(_bad_regex(pattern, detail.splitlines()[-1]))
        raise SearchError(f"ripgrep failed: {detail}")
    chosen = _glob_matcher(file_glob) if file_glob else None
    files = (
        FileHits(path, tuple(lines[number] for number in sorted(lines)))
        for path, lines in collected.lines.items()
        if not _in_skipped_dir(path, root) and (chosen is None or chosen(_relative(path, root)))
    )
    return ContentResults(tuple(sorted(files, key=lambda hits: str(hits.path))), collected.truncated)


class _Collected:
    """ripgrep's hits gathered per file, up to MAX_MATCHES matching lines."""

    def __init__(self) -> None:
        self.lines: dict[Path, dict[int, LineHit]] = {}
        self.matched = 0
        self.truncated = False

    def add(self, path: Path, hit: LineHit) -> bool:
        """Record ``hit``; True once enough matches are in and the search should stop."""
        lines = self.lines.setdefault(path, {})
        if hit.matched or hit.line not in lines:
            lines[hit.line] = hit
        self.matched += hit.matched
        self.truncated = self.matched >= MAX_MATCHES
        return self.truncated


async def _drain(stream: anyio.abc.ByteReceiveStream, into: bytearray, limit: int = 64 * 1024) -> None:
    async for chunk in stream:
        if len(into) < limit:
            into.extend(chunk)


async def _lines(stream: anyio.abc.ByteReceiveStream) -> AsyncGenerator[bytes, None]:
    """Non-empty lines of a byte stream, however the chunks fall."""
    pending = bytearray()
    async for chunk in stream:
        pending.extend(chunk)
        *complete, rest = pending.split(b"\n")
        for line in complete:
            if line:
                yield bytes(line)
        pending = bytearray(rest)
    if pending:
        yield bytes(pending)


def _parse_ripgrep_line(directory: Path, raw: bytes) -> tuple[Path, LineHit] | None:
    """One ``rg --json`` message as a hit, or None for begin/end/summary messages."""
    message = json.loads(raw)
    kind = message.get("type")
    if kind not in ("match", "context"):
        return None
    data = message["data"]
    path = _ripgrep_path(directory, _ripgrep_bytes(data["path"]))
    text = _ripgrep_bytes(data["lines"]).decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
    return path, LineHit(int(data["line_number"]), text, kind == "match")


def _ripgrep_bytes(value: dict[str, str]) -> bytes:
    """ripgrep sends ``{"text": ...}`` for UTF-8 data and ``{"bytes": base64}`` otherwise."""
    if "text" in value:
        return value["text"].encode("utf-8")
    return base64.b64decode(value["bytes"])


async def _python_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    listed = await _git_listing(root)
    if listed is not None:
        return await anyio.to_thread.run_sync(_existing_files, root, listed)
    return await anyio.to_thread.run_sync(_walk_files, root)


async def _git_listing(root: Path) -> list[str] | None:
    """Files git considers part of the work tree below ``root``, or None outside a git repo."""
    git = shutil.which("git")
    if git is None:
        return None
    command = git_command(git, "ls-files", "--cached", "--others", "--exclude-standard", "-z", directory=str(root))
    result = await anyio.run_process(command.argv, check=False, stdin=subprocess.DEVNULL, env=command.env)
    if result.returncode != 0:
        return None
    return [os.fsdecode(raw) for raw in result.stdout.split(b"\0") if raw]


def _existing_files(root: Path, listed: list[str]) -> list[Path]:
    """git's listing minus deleted files, submodules and skipped directories."""
    paths = {root / name for name in listed if not name.endswith("/")}
    kept = (path for path in paths if not _in_skipped_dir(path, root) and path.is_file())
    return sorted(kept, key=str)


def _walk_files(root: Path) -> list[Path]:
    """Files under ``root`` that are not hidden, not in skipped directories and not matched by
    the root ``.gitignore`` (ripgrep's defaults outside a git work tree)."""
    ignored = _gitignore_rules(root / ".gitignore")
    found: list[Path] = []
    for directory, subdirs, names in os.walk(root):
        here = Path(directory)
        relative_dir = "" if here == root else here.relative_to(root).as_posix() + "/"
        subdirs[:] = sorted(
            name
            for name in subdirs
            if not name.startswith(".")
            and name not in SKIP_DIRS
            and not _is_ignored(ignored, relative_dir + name, is_dir=True)
        )
        for name in names:
            if not name.startswith(".") and not _is_ignored(ignored, relative_dir + name, is_dir=False):
                found.append(here / name)
    return sorted((path for path in found if path.is_file()), key=str)


def _in_skipped_dir(path: Path, root: Path) -> bool:
    return any(part in SKIP_DIRS for part in Path(_relative(path, root)).parts[:-1])


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to the search root, as glob patterns see it."""
    if root == path:
        return path.name
    return path.relative_to(root).as_posix() if is_within(path, (root,)) else path.as_posix()


def _python_content(files: Sequence[Path], regex: re.Pattern[str], context: int) -> ContentResults:
    results: list[FileHits] = []
    matched = 0
    for path in files:
        hits = _search_file(path, regex, context)
        if hits is None:
            continue
        results.append(hits)
        matched += hits.matches
        if matched >= MAX_MATCHES:
            return ContentResults(tuple(results), truncated=True)
    return ContentResults(tuple(results))


def _search_file(path: Path, regex: re.Pattern[str], context: int) -> FileHits | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if looks_binary(data):
        return None  # binary (ripgrep skips a file with a NUL byte too)
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    matching = [index for index, line in enumerate(lines) if regex.search(line)]
    if not matching:
        return None
    wanted: set[int] = set()
    for index in matching:
        wanted.update(range(max(index - context, 0), min(index + context + 1, len(lines))))
    chosen = set(matching)
    hits = tuple(LineHit(index + 1, lines[index], index in chosen) for index in sorted(wanted))
    return FileHits(path, hits)


# ---------------------------------------------------------------------------------------------
# Globs and .gitignore


def _anchored_matcher(pattern: str) -> Callable[[str], bool]:
    """A matcher for an ignore pattern with a slash: it matches the whole relative path."""
    regex = re.compile("(?s)" + _glob_regex(pattern) + r"\Z")
    return lambda relative: regex.match(relative) is not None


def _glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test of a root-relative path against a glob: ``*.py`` matches the file name at any
    depth; a pattern with a ``/`` (``src/**/test_*.py``) matches the whole relative path."""
    anchored = "/" in pattern.strip("/")
    regex = re.compile("(?s)" + _glob_regex(pattern.strip("/")) + r"\Z")
    if anchored:
        return lambda relative: regex.match(relative) is not None
    return lambda relative: regex.match(relative.rsplit("/", 1)[-1]) is not None


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body[0] in "!^" else body) + "]")
            i = end + 1
        elif char == "{" and (end := pattern.find("}", i)) != -1:
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_regex(option) for option in options) + ")")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


@value
class _IgnoreRule:
    matches: Callable[[str], bool]
    negated: bool
    directories_only: bool


def _gitignore_rules(path: Path) -> list[_IgnoreRule]:
    """The simple subset of .gitignore: globs, ``!`` negation, trailing ``/``, anchoring ``/``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    rules: list[_IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        directories_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        if line.startswith("/") or "/" in line:
            rules.append(_IgnoreRule(_anchored_matcher(line.lstrip("/")), negated, directories_only))
        else:
            rules.append(_IgnoreRule(_glob_matcher(line), negated, directories_only))
    return rules


def _is_ignored(rules: Sequence[_IgnoreRule], relative: str, *, is_dir: bool) -> bool:
    ignored = False
    for rule in rules:
        if rule.directories_only and not is_dir:
            continue
        if rule.matches(relative):
            ignored = not rule.negated
    return ignored


def find_by_name(files: Sequence[Path], pattern: str, root: Path) -> list[Path]:
    """Files whose name matches a glob (``*.py``, ``**/test_*.py``) or contains a plain substring."""
    if any(char in pattern for char in "*?[{"):
        matcher = _glob_matcher(pattern)
        return [path for path in files if matcher(_relative(path, root))]
    needle = pattern.lower()
    if "/" in needle:
        return [path for path in files if needle in _relative(path, root).lower()]
    return [path for path in files if needle in path.name.lower()]


# ---------------------------------------------------------------------------------------------
# Pages


def format_content_page(results: ContentResults, request: SearchRequest, base: Path) -> SearchPage:
    where = display_path(request.root, base)
    if not results.files:
        scope = f" (files matching {request.file_glob})" if request.file_glob else ""
        return SearchPage(f"No matches for {request.pattern!r} in {where}{scope}.", (), 0)
    if request.output_mode == "content":
        return _matches_page(results, request, base)
    total = len(results.files)
    page = results.files[request.offset : request.offset + request.limit]
    if request.output_mode == "count":
        matches = sum(hits.matches for hits in results.files)
        header = f"{_count(matches, 'matching line')} in {_count(total, 'file')}"
        body = [f"{display_path(hits.path, base)}:{hits.matches}" for hits in page]
    else:
        header = f"{_count(total, 'file')} with matches"
        body = [display_path(hits.path, base) for hits in page]
    locations = tuple(Location(str(hits.path)) for hits in page[:MAX_LOCATIONS])
    footer = _paging_note(request, len(page), total, "files", results.truncated)
    return SearchPage("\n".join([header + ":", *body, *footer]), locations, total)


def _matches_page(results: ContentResults, request: SearchRequest, base: Path) -> SearchPage:
    matches = [(hits, hit) for hits in results.files for hit in hits.lines if hit.matched]
    total = len(matches)
    page = matches[request.offset : request.offset + request.limit]
    body: list[str] = []
    for hits, group in groupby(page, key=lambda pair: pair[0]):
        shown = _with_context([hit.line for _, hit in group], hits, request.context)
        name = display_path(hits.path, base)
        previous: int | None = None
        for hit in shown:
            if request.context and previous is not None and hit.line != previous + 1:
                body.append("--")
            separator = ":" if hit.matched else "-"
            body.append(f"{name}{separator}{hit.line}{separator}{_cap_line(hit.text)}")
            previous = hit.line
        if request.context:
            body.append("--")
    if body and body[-1] == "--":
        body.pop()
    header = f"{_count(total, 'matching line')} in {_count(len(results.files), 'file')}:"
    locations = tuple(Location(str(hits.path), hit.line) for hits, hit in page[:MAX_LOCATIONS])
    footer = _paging_note(request, len(page), total, "matches", results.truncated)
    return SearchPage("\n".join([header, *body, *footer]), locations, total)


def _with_context(lines: list[int], hits: FileHits, context: int) -> list[LineHit]:
    if not context:
        wanted = set(lines)
        return [hit for hit in hits.lines if hit.line in wanted]
    return [hit for hit in hits.lines if any(abs(hit.line - line) <= context for line in lines)]


def format_files_page(files: Sequence[Path], request: SearchRequest, base: Path) -> SearchPage:
    where = display_path(request.root, base)
    if not files:
        return SearchPage(f"No files matching {request.pattern!r} in {where}.", (), 0)
    page = files[request.offset : request.offset + request.limit]
    body = [display_path(path, base) for path in page]
    locations = tuple(Location(str(path)) for path in page[:MAX_LOCATIONS])
    footer = _paging_note(request, len(page), len(files), "files", truncated=False)
    header = f"{_count(len(files), 'file')}:"
    return SearchPage("\n".join([header, *body, *footer]), locations, len(files))


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _paging_note(request: SearchRequest, shown: int, total: int, noun: str, truncated: bool) -> list[str]:
    notes: list[str] = []
    if shown == 0:
        notes.append(f"[offset={request.offset} is past the end: there are {total} {noun}. Use a smaller offset.]")
    elif request.offset + shown < total:
        first, last = request.offset + 1, request.offset + shown
        notes.append(
            f"[Showing {noun} {first}–{last} of {total}. Use offset={last} for the next page, "
            "or narrow the pattern, path or file_glob.]"
        )
    if truncated:
        notes.append(
            f"[The search stopped after {MAX_MATCHES:,} matching lines, so counts are incomplete; "
            "narrow the pattern, path or file_glob.]"
        )
    return ["", *notes] if notes else []


def _cap_line(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS:,} more characters]"


# ---------------------------------------------------------------------------------------------
# Suggestions for a path that does not exist


_SUGGESTION_WALK_LIMIT = 20_000


def similar_paths(missing: Path, roots: Sequence[Path], *, limit: int = 8) -> list[Path]:
    """Existing files the model may have meant: close names beside ``missing`` and files with
    the same name elsewhere in the workspace (a bounded walk). Blocking: run it in a thread."""
    found: list[Path] = []
    parent = missing.parent
    with contextlib.suppress(OSError):
        siblings = {entry.name: entry for entry in os.scandir(parent)}
        lowered = {name.lower(): name for name in siblings}
        for close in difflib.get_close_matches(missing.name.lower(), list(lowered), n=5, cutoff=0.7):
            found.append(parent / lowered[close])
    wanted = missing.name.lower()
    visited = 0
    for root in roots:
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = sorted(name for name in subdirs if not name.startswith(".") and name not in SKIP_DIRS)
            visited += len(subdirs) + len(names)
            found.extend(Path(directory) / name for name in names if name.lower() == wanted)
            if visited > _SUGGESTION_WALK_LIMIT or len(found) >= limit * 2:
                break
    unique = list(dict.fromkeys(path for path in found if path != missing))
    return unique[:limit]
