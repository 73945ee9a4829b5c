"""The search engine behind search_files, exercised on real trees with both engines.

The pure-Python fallback always runs. ripgrep runs only where ``rg`` is installed; each engine
test is parametrized over both, so the two are held to the same results.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from acp_hermes_tools.search import (
    MAX_MATCHES,
    ContentResults,
    LineHit,
    SearchError,
    SearchRequest,
    display_path,
    find_by_name,
    list_files,
    ripgrep_path,
    run_search,
    search_content,
    similar_paths,
)
from acp_hermes_tools.search import _parse_ripgrep_line as parse_ripgrep_line

pytestmark = pytest.mark.anyio

NO_RG = ripgrep_path() is None
ENGINES = [
    "python",
    pytest.param("ripgrep", marks=pytest.mark.skipif(NO_RG, reason="ripgrep (rg) is not installed")),
]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def summary(results: ContentResults, root: Path) -> list[tuple[str, int, str, bool]]:
    return [
        (hits.path.relative_to(root).as_posix(), hit.line, hit.text, hit.matched)
        for hits in results.files
        for hit in hits.lines
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(
        tmp_path,
        {
            "b.py": "import os\n# TODO: b\n",
            "a.py": "one\ntwo TODO\nthree\nfour\nfive TODO\nsix\n",
            "src/deep/c.txt": "nothing here\nTODO in txt\n",
            "src/test_x.py": "def test_x():\n    pass\n",
            "node_modules/lib.js": "// TODO skipped\n",
            ".hidden/secret.py": "# TODO hidden dir\n",
            "image.bin": b"\x89PNG\x00\x00TODO\x00",
            "crlf.txt": "first\r\nTODO crlf\r\n",
        },
    )
    return tmp_path


@pytest.mark.parametrize("engine", ENGINES)
async def test_content_search_is_sorted_by_path_then_line(tree: Path, engine: str) -> None:
    results = await search_content(tree, "TODO", engine=engine)  # type: ignore[arg-type]
    found = summary(results, tree)
    assert [(path, line) for path, line, _, _ in found] == [
        ("a.py", 2),
        ("a.py", 5),
        ("b.py", 2),
        ("crlf.txt", 2),
        ("src/deep/c.txt", 2),
    ]
    assert ("crlf.txt", 2, "TODO crlf", True) in found  # no stray \r
    assert all(path.is_absolute() for path in (hits.path for hits in results.files))


@pytest.mark.parametrize("engine", ENGINES)
async def test_context_lines_surround_matches(tree: Path, engine: str) -> None:
    results = await search_content(tree / "a.py", "TODO", context=1, engine=engine)  # type: ignore[arg-type]
    assert summary(results, tree) == [
        ("a.py", 1, "one", False),
        ("a.py", 2, "two TODO", True),
        ("a.py", 3, "three", False),
        ("a.py", 4, "four", False),
        ("a.py", 5, "five TODO", True),
        ("a.py", 6, "six", False),
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_file_glob_limits_the_files_searched(tree: Path, engine: str) -> None:
    results = await search_content(tree, "TODO", file_glob="*.txt", engine=engine)  # type: ignore[arg-type]
    assert [hits.path.name for hits in results.files] == ["crlf.txt", "c.txt"]
    anchored = await search_content(tree, "TODO", file_glob="src/**/*.txt", engine=engine)  # type: ignore[arg-type]
    assert [hits.path.name for hits in anchored.files] == ["c.txt"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_invalid_regex_is_a_clear_error(tree: Path, engine: str) -> None:
    with pytest.raises(SearchError, match="invalid regular expression"):
        await search_content(tree, "foo(", engine=engine)  # type: ignore[arg-type]


@needs_git
@pytest.mark.parametrize("engine", ENGINES)
async def test_gitignore_is_honoured_in_a_git_work_tree(tree: Path, engine: str) -> None:
    git_init(tree)
    write(tree, {".gitignore": "build/\n*.log\n", "build/out.py": "TODO\n", "x.log": "TODO\n"})
    results = await search_content(tree, "TODO", engine=engine)  # type: ignore[arg-type]
    names = {hits.path.relative_to(tree).as_posix() for hits in results.files}
    assert "build/out.py" not in names and "x.log" not in names
    assert {"a.py", "b.py", "src/deep/c.txt"} <= names
    assert ".hidden/secret.py" in names  # hidden files count inside a repository, as in git


async def test_fallback_walk_outside_git_applies_root_gitignore(tree: Path) -> None:
    write(
        tree,
        {".gitignore": "# comment\nbuild/\n*.log\n!keep.log\n/top.py\n", "build/out.py": "TODO\n",
         "x.log": "TODO\n", "keep.log": "TODO\n", "top.py": "TODO\n", "src/top.py": "TODO\n"},
    )  # fmt: skip
    if await _inside_git(tree):
        pytest.skip("tmp_path is inside a git work tree")
    files = {path.relative_to(tree).as_posix() for path in await list_files(tree, engine="python")}
    assert {"keep.log", "src/top.py", "a.py", "image.bin"} <= files
    hidden_or_ignored = {"build/out.py", "x.log", "top.py", "node_modules/lib.js", ".hidden/secret.py", ".gitignore"}
    assert not files & hidden_or_ignored


async def _inside_git(path: Path) -> bool:
    if shutil.which("git") is None:
        return False
    done = subprocess.run(["git", "-C", str(path), "rev-parse"], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.parametrize("engine", ENGINES)
async def test_binary_and_skipped_directories_are_not_searched(tree: Path, engine: str) -> None:
    results = await search_content(tree, "TODO", engine=engine)  # type: ignore[arg-type]
    names = {hits.path.name for hits in results.files}
    assert "image.bin" not in names and "lib.js" not in names


async def test_python_fallback_can_be_forced_even_when_rg_exists(tree: Path) -> None:
    forced = await search_content(tree, "TODO", engine="python")
    automatic = await search_content(tree, "TODO", engine="auto")
    assert summary(forced, tree) == summary(automatic, tree)
    assert len(forced.files) == 4


@pytest.mark.skipif(not NO_RG, reason="only meaningful where ripgrep is missing")
async def test_asking_for_ripgrep_when_missing_is_an_error(tree: Path) -> None:
    with pytest.raises(SearchError, match="not installed"):
        await search_content(tree, "TODO", engine="ripgrep")


@pytest.mark.parametrize("engine", ENGINES)
async def test_search_stops_at_the_match_cap(tmp_path: Path, engine: str) -> None:
    write(tmp_path, {"many.txt": "hit\n" * (MAX_MATCHES + 10)})
    results = await search_content(tmp_path, "hit", engine=engine)  # type: ignore[arg-type]
    assert results.truncated
    assert sum(hits.matches for hits in results.files) <= MAX_MATCHES + 10


@pytest.mark.parametrize("engine", ENGINES)
async def test_find_files_by_glob_and_substring(tree: Path, engine: str) -> None:
    files = await list_files(tree, engine=engine)  # type: ignore[arg-type]
    names = [path.relative_to(tree).as_posix() for path in find_by_name(files, "*.py", tree)]
    assert names == ["a.py", "b.py", "src/test_x.py"]
    tests = find_by_name(files, "**/test_*.py", tree)
    assert [path.name for path in tests] == ["test_x.py"]
    assert [path.name for path in find_by_name(files, "DEEP/C", tree)] == ["c.txt"]
    assert [path.name for path in find_by_name(files, "CRLF", tree)] == ["crlf.txt"]
    assert [path.name for path in find_by_name(files, "*.{txt,bin}", tree)] == ["crlf.txt", "image.bin", "c.txt"]


# --- pages ------------------------------------------------------------------------------------


async def test_content_page_format_and_paging(tree: Path) -> None:
    base = tree
    first = await run_search(SearchRequest("TODO", tree, limit=2), base, engine="python")
    lines = first.text.splitlines()
    assert lines[:3] == ["5 matching lines in 4 files:", "a.py:2:two TODO", "a.py:5:five TODO"]
    assert "Showing matches 1–2 of 5. Use offset=2 for the next page" in first.text
    assert first.total == 5
    assert [(loc.path, loc.line) for loc in first.locations] == [(str(tree / "a.py"), 2), (str(tree / "a.py"), 5)]
    last = await run_search(SearchRequest("TODO", tree, limit=2, offset=4), base, engine="python")
    assert "src/deep/c.txt:2:TODO in txt" in last.text and "offset=" not in last.text
    past = await run_search(SearchRequest("TODO", tree, offset=50), base, engine="python")
    assert "offset=50 is past the end" in past.text


async def test_content_page_with_context_uses_grep_separators(tree: Path) -> None:
    page = await run_search(SearchRequest("five", tree, context=1), tree, engine="python")
    assert page.text.splitlines()[1:] == ["a.py-4-four", "a.py:5:five TODO", "a.py-6-six"]


async def test_count_and_files_with_matches_modes(tree: Path) -> None:
    count = await run_search(SearchRequest("TODO", tree, output_mode="count"), tree, engine="python")
    assert count.text.splitlines()[1:3] == ["a.py:2", "b.py:1"]
    listed = await run_search(SearchRequest("TODO", tree, output_mode="files_with_matches"), tree, engine="python")
    assert listed.text.splitlines()[1:] == ["a.py", "b.py", "crlf.txt", "src/deep/c.txt"]
    assert listed.locations[0].path == str(tree / "a.py") and listed.locations[0].line is None


async def test_no_matches_and_missing_path(tree: Path) -> None:
    nothing = await run_search(SearchRequest("zzz_not_there", tree), tree, engine="python")
    assert nothing.text == "No matches for 'zzz_not_there' in .." and nothing.total == 0
    with pytest.raises(SearchError, match="does not exist"):
        await run_search(SearchRequest("x", tree / "missing"), tree, engine="python")


async def test_long_lines_are_cut_in_pages(tmp_path: Path) -> None:
    write(tmp_path, {"long.txt": "needle " + "x" * 3000 + "\n"})
    page = await run_search(SearchRequest("needle", tmp_path), tmp_path, engine="python")
    assert "more characters]" in page.text and len(page.text) < 1000


async def test_files_page_lists_relative_paths(tree: Path) -> None:
    page = await run_search(SearchRequest("*.txt", tree, target="files"), tree, engine="python")
    assert page.text.splitlines() == ["2 files:", "crlf.txt", "src/deep/c.txt"]
    inner = tree / "src" / "deep"
    nested = await run_search(SearchRequest("*.txt", tree / "src", target="files"), inner, engine="python")
    assert nested.text.splitlines() == ["1 file:", "c.txt"]


def test_display_path_is_relative_inside_base_and_absolute_outside(tmp_path: Path) -> None:
    assert display_path(tmp_path / "a" / "b.py", tmp_path) == "a/b.py"
    assert display_path(tmp_path, tmp_path) == "."
    assert display_path(tmp_path.parent, tmp_path) == str(tmp_path.parent)


def test_similar_paths_suggests_siblings_and_same_name_elsewhere(tmp_path: Path) -> None:
    names = ["src/config.py", "src/other.py", "lib/deep/settings.py", "node_modules/settings.py"]
    write(tmp_path, dict.fromkeys(names, ""))
    assert similar_paths(tmp_path / "src" / "confg.py", [tmp_path]) == [tmp_path / "src" / "config.py"]
    assert similar_paths(tmp_path / "settings.py", [tmp_path]) == [tmp_path / "lib" / "deep" / "settings.py"]


def test_ripgrep_json_messages_are_read_as_hits(tmp_path: Path) -> None:
    """ripgrep's documented --json messages, so its reader is checked even where rg is absent."""
    match = (
        b'{"type":"match","data":{"path":{"text":"./src/a.py"},"lines":{"text":"x = 1\\r\\n"},'
        b'"line_number":3,"absolute_offset":10,"submatches":[{"match":{"text":"x"},"start":0,"end":1}]}}'
    )
    context = (
        b'{"type":"context","data":{"path":{"bytes":"Li9iJ3MudHh0"},"lines":{"bytes":"w6kK"},'
        b'"line_number":7,"absolute_offset":0,"submatches":[]}}'
    )
    assert parse_ripgrep_line(tmp_path, match) == (tmp_path / "src" / "a.py", LineHit(3, "x = 1", True))
    assert parse_ripgrep_line(tmp_path, context) == (tmp_path / "b's.txt", LineHit(7, "é", False))
    assert parse_ripgrep_line(tmp_path, b'{"type":"begin","data":{"path":{"text":"a"}}}') is None
