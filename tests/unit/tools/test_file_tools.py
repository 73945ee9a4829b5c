"""The file tools driven through the real registry, on real files, with a real ToolContext."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_tools.context import Permit, ToolContext
from acp_hermes_tools.contracts import DiffDisplay, Edit, FileChange, Location, Request, TextDisplay
from acp_hermes_tools.files import FILE_TOOLS, MAX_LINE_CHARS
from acp_hermes_tools.registry import MAX_RESULT_CHARS, Access, ToolCall, ToolRegistry, ToolResult
from tests.support.tools import RecordingGate, make_context, make_scope

pytestmark = pytest.mark.anyio

REGISTRY = ToolRegistry(FILE_TOOLS)


@dataclass
class SnapshotGate(RecordingGate):
    """Also records what each file held on disk at the moment its change was authorized."""

    on_disk: list[dict[Path, str | None]] = field(default_factory=list)

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        if isinstance(request, Edit):
            changes = request.changes
            self.on_disk.append({c.path: c.path.read_text() if c.path.exists() else None for c in changes})
        return await super().authorize(ctx, request)


async def call(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return await REGISTRY.dispatch(ToolCall("toolu_1", name, args), ctx)


def title(name: str, cwd: Path, **args: Any) -> tuple[str, tuple[Location, ...]]:
    presentation, _ = REGISTRY.presentation(ToolCall("toolu_1", name, args), make_scope(cwd))
    return presentation.title, presentation.locations


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\n\ndef main():\n    return 1\n")
    (root / "src" / "util.py").write_text("def helper():\n    pass\n")
    return root


# --- declarations -----------------------------------------------------------------------------


def test_declarations() -> None:
    tools = {tool.name: tool for tool in FILE_TOOLS}
    assert set(tools) == {"read_file", "write_file", "patch", "search_files"}
    assert {name: (t.kind, t.access, t.parallel_safe) for name, t in tools.items()} == {
        "read_file": ("read", Access.READ, True),
        "write_file": ("edit", Access.EDIT, False),
        "patch": ("edit", Access.EDIT, False),
        "search_files": ("search", Access.READ, True),
    }
    for tool in FILE_TOOLS:
        assert tool.present is not None and len(tool.description) > 80
        assert tool.schema["additionalProperties"] is False and tool.schema["required"]


async def test_unknown_arguments_are_rejected(project: Path) -> None:
    result = await call(make_context(project), "read_file", path="src/app.py", lines=3)
    assert not result.ok and "lines" in result.text


# --- read_file --------------------------------------------------------------------------------


async def test_read_file_numbers_lines_and_shows_the_excerpt(project: Path) -> None:
    result = await call(make_context(project), "read_file", path="src/app.py")
    assert result.ok
    assert result.text == "1|import os\n2|\n3|\n4|def main():\n5|    return 1"
    assert result.display == (TextDisplay("import os\n\n\ndef main():\n    return 1", fence="python"),)
    assert result.locations == (Location(str(project / "src" / "app.py"), 1),)


async def test_read_file_pages_and_says_where_to_continue(project: Path) -> None:
    (project / "big.txt").write_text("".join(f"row {n}\n" for n in range(1, 1201)))
    ctx = make_context(project)
    first = await call(ctx, "read_file", path="big.txt")
    assert first.text.splitlines()[0] == "1|row 1" and "500|row 500" in first.text
    assert "501|" not in first.text
    assert first.text.endswith("[Showing lines 1–500 of 1200. Continue with offset=501.]")
    middle = await call(ctx, "read_file", path="big.txt", offset=1150, limit=100)
    assert middle.text.splitlines()[0] == "1150|row 1150" and middle.text.endswith("1200|row 1200")
    assert middle.locations == (Location(str(project / "big.txt"), 1150),)
    past = await call(ctx, "read_file", path="big.txt", offset=1300)
    assert not past.ok and "past the end" in past.text and "1200 lines" in past.text


async def test_read_file_cuts_very_long_lines(project: Path) -> None:
    (project / "min.js").write_text("x" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    result = await call(make_context(project), "read_file", path="min.js")
    first, second = result.text.splitlines()
    assert first.startswith("1|xxx") and first.endswith("[line cut: 500 more characters]")
    assert second == "2|short"


async def test_read_file_stops_at_the_output_budget_and_says_where_to_continue(project: Path) -> None:
    (project / "wide.txt").write_text(("y" * 1000 + "\n") * 300)
    result = await call(make_context(project), "read_file", path="wide.txt")
    assert len(result.text) <= MAX_RESULT_CHARS
    last_shown = int(result.text.splitlines()[-3].split("|")[0])
    assert 40 < last_shown < 300
    assert result.text.endswith(
        f"[Showing lines 1–{last_shown} of 300 (output size limit reached). Continue with offset={last_shown + 1}.]"
    )


async def test_read_file_refuses_binary_files_with_type_and_size(project: Path) -> None:
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    result = await call(make_context(project), "read_file", path="logo.png")
    assert not result.ok
    assert "logo.png is a binary file (PNG image, 2.0 KB)" in result.text


async def test_read_file_empty_file(project: Path) -> None:
    (project / "empty.txt").write_text("")
    result = await call(make_context(project), "read_file", path="empty.txt")
    assert result.ok and result.text == "empty.txt is empty (0 bytes)."


async def test_read_file_on_a_directory_lists_entries(project: Path) -> None:
    result = await call(make_context(project), "read_file", path="src")
    assert not result.ok
    assert "src is a directory" in result.text and "app.py, util.py" in result.text


async def test_read_file_missing_suggests_close_names(project: Path) -> None:
    (project / "docs" / "deep").mkdir(parents=True)
    (project / "docs" / "deep" / "guide.md").write_text("# Guide\n")
    ctx = make_context(project)
    typo = await call(ctx, "read_file", path="src/ap.py")
    assert not typo.ok and "src/ap.py does not exist" in typo.text and "  src/app.py" in typo.text
    elsewhere = await call(ctx, "read_file", path="guide.md")
    assert "  docs/deep/guide.md" in elsewhere.text
    nothing = await call(ctx, "read_file", path="zzzz.qqq")
    assert "search_files" in nothing.text


async def test_paths_resolve_against_the_context_cwd(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "src").mkdir(parents=True)
    (elsewhere / "src" / "app.py").write_text("WRONG FILE\n")
    monkeypatch.chdir(elsewhere)
    ctx = make_context(project)
    result = await call(ctx, "read_file", path="src/app.py")
    assert "import os" in result.text
    dotted = await call(ctx, "read_file", path="src/../src/./util.py")
    assert dotted.locations == (Location(str(project / "src" / "util.py"), 1),)
    (tmp_path / "link").symlink_to(project / "src")
    linked = await call(ctx, "read_file", path="../link/util.py")
    assert linked.ok and linked.locations == (Location(str(project / "src" / "util.py"), 1),)


# --- write_file -------------------------------------------------------------------------------


async def test_write_file_creates_file_and_parents_after_authorization(project: Path) -> None:
    gate = SnapshotGate()
    ctx = make_context(project, gate=gate)
    result = await call(ctx, "write_file", path="pkg/sub/new.py", content="x = 1\ny = 2\n")
    target = project / "pkg" / "sub" / "new.py"
    assert result.ok and result.text == "Created pkg/sub/new.py (2 lines, 12 bytes)."
    assert target.read_text() == "x = 1\ny = 2\n"
    assert gate.edits == [[FileChange(target, None, "x = 1\ny = 2\n")]]
    assert gate.on_disk == [{target: None}]  # nothing written before the gate said yes
    assert result.display == (DiffDisplay(str(target), None, "x = 1\ny = 2\n"),)
    assert result.locations == (Location(str(target), 1),)


async def test_write_file_overwrite_shows_full_old_text(project: Path) -> None:
    gate = SnapshotGate()
    ctx = make_context(project, gate=gate)
    target = project / "src" / "util.py"
    result = await call(ctx, "write_file", path="src/util.py", content="def helper():\n    return 2\n")
    assert result.ok and "Overwrote src/util.py" in result.text and "+1 −1" in result.text
    assert gate.edits == [[FileChange(target, "def helper():\n    pass\n", "def helper():\n    return 2\n")]]
    assert gate.on_disk == [{target: "def helper():\n    pass\n"}]
    assert result.locations == (Location(str(target), 2),)


async def test_write_file_refused_leaves_disk_untouched(project: Path) -> None:
    ctx = make_context(project, gate=RecordingGate(allow=False))
    result = await call(ctx, "write_file", path="src/util.py", content="gone\n")
    created = await call(ctx, "write_file", path="new.txt", content="hi\n")
    assert not result.ok and not created.ok and "declined" in result.text
    assert (project / "src" / "util.py").read_text() == "def helper():\n    pass\n"
    assert not (project / "new.txt").exists()


async def test_write_file_with_identical_content_writes_nothing(project: Path) -> None:
    gate = RecordingGate()
    result = await call(make_context(project, gate=gate), "write_file", path="src/util.py",
                        content="def helper():\n    pass\n")  # fmt: skip
    assert result.ok and "nothing was written" in result.text and gate.edits == []


# --- patch: replace ---------------------------------------------------------------------------


async def test_patch_replace_authorizes_full_texts_then_writes(project: Path) -> None:
    gate = SnapshotGate()
    ctx = make_context(project, gate=gate)
    target = project / "src" / "app.py"
    before = target.read_text()
    result = await call(ctx, "patch", mode="replace", path="src/app.py", old_string="return 1", new_string="return 42")
    after = before.replace("return 1", "return 42")
    assert result.ok and result.text == "Edited src/app.py: replaced 1 occurrence (+1 −1 lines)."
    assert gate.edits == [[FileChange(target, before, after)]] and gate.on_disk == [{target: before}]
    assert target.read_text() == after
    assert result.display == (DiffDisplay(str(target), before, after),)
    assert result.locations == (Location(str(target), 5),)


async def test_patch_replace_not_found_shows_closest_text(project: Path) -> None:
    gate = RecordingGate()
    ctx = make_context(project, gate=gate)
    result = await call(ctx, "patch", mode="replace", path="src/app.py",
                        old_string="def main():\n  return 1", new_string="x")  # fmt: skip
    assert not result.ok
    assert "old_string was not found in src/app.py" in result.text
    assert "at line 4 except for whitespace" in result.text and "    5|    return 1" in result.text
    assert gate.edits == []


async def test_patch_replace_ambiguous_and_replace_all(project: Path) -> None:
    (project / "dup.txt").write_text("a\nb\na\n")
    ctx = make_context(project)
    ambiguous = await call(ctx, "patch", mode="replace", path="dup.txt", old_string="a", new_string="z")
    assert not ambiguous.ok and "(lines 1, 3)" in ambiguous.text
    every = await call(ctx, "patch", mode="replace", path="dup.txt", old_string="a", new_string="z", replace_all=True)
    assert every.ok and "2 occurrences" in every.text and (project / "dup.txt").read_text() == "z\nb\nz\n"


async def test_patch_replace_argument_errors(project: Path) -> None:
    ctx = make_context(project)
    same = await call(ctx, "patch", mode="replace", path="src/app.py", old_string="os", new_string="os")
    assert not same.ok and "identical" in same.text
    incomplete = await call(ctx, "patch", mode="replace", path="src/app.py", old_string="os")
    assert not incomplete.ok and "needs new_string" in incomplete.text
    missing = await call(ctx, "patch", mode="replace", path="src/utl.py", old_string="a", new_string="b")
    assert not missing.ok and "  src/util.py" in missing.text


async def test_patch_replace_refused_leaves_file(project: Path) -> None:
    ctx = make_context(project, gate=RecordingGate(allow=False))
    before = (project / "src" / "app.py").read_text()
    result = await call(ctx, "patch", mode="replace", path="src/app.py", old_string="import os", new_string="")
    assert not result.ok and (project / "src" / "app.py").read_text() == before


# --- patch: unified and V4A -------------------------------------------------------------------


MULTI_FILE = """--- a/src/app.py
+++ b/src/app.py
@@ -4,2 +4,2 @@
 def main():
-    return 1
+    return 2
--- /dev/null
+++ b/docs/notes.md
@@ -0,0 +1,2 @@
+# Notes
+hello
--- a/src/util.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def helper():
-    pass
"""


async def test_patch_applies_multi_file_diff_with_one_authorization(project: Path) -> None:
    gate = SnapshotGate()
    ctx = make_context(project, gate=gate)
    app, notes, util = project / "src" / "app.py", project / "docs" / "notes.md", project / "src" / "util.py"
    app_before, util_before = app.read_text(), util.read_text()
    result = await call(ctx, "patch", mode="patch", patch=MULTI_FILE)
    assert result.ok, result.text
    app_after = app_before.replace("return 1", "return 2")
    assert gate.edits == [
        [
            FileChange(app, app_before, app_after),
            FileChange(notes, None, "# Notes\nhello\n"),
            FileChange(util, util_before, None),
        ]
    ]
    assert gate.on_disk == [{app: app_before, notes: None, util: util_before}]
    assert app.read_text() == app_after and notes.read_text() == "# Notes\nhello\n" and not util.exists()
    assert result.text.splitlines() == [
        "Patched 3 files:",
        "  M src/app.py (+1 −1)",
        "  A docs/notes.md (+2 −0)",
        "  D src/util.py (−2)",
    ]
    assert result.display == (
        DiffDisplay(str(app), app_before, app_after),
        DiffDisplay(str(notes), None, "# Notes\nhello\n"),
        DiffDisplay(str(util), util_before, ""),
        TextDisplay("Deleted src/util.py"),
    )
    assert result.locations == (Location(str(app), 5), Location(str(notes), 1))


async def test_patch_refused_changes_nothing(project: Path) -> None:
    gate = RecordingGate(allow=False)
    before = {path: path.read_text() for path in (project / "src").iterdir()}
    result = await call(make_context(project, gate=gate), "patch", mode="patch", patch=MULTI_FILE)
    assert not result.ok and len(gate.edits) == 1
    assert {path: path.read_text() for path in (project / "src").iterdir()} == before
    assert not (project / "docs").exists()


async def test_patch_with_a_failing_hunk_writes_nothing_and_asks_nothing(project: Path) -> None:
    gate = RecordingGate()
    broken = MULTI_FILE.replace("-    pass\n", "-    return None\n")
    result = await call(make_context(project, gate=gate), "patch", mode="patch", patch=broken)
    assert not result.ok and gate.edits == []
    assert "src/util.py: hunk 1 of 1 (@@ -1,2 +0,0 @@) does not apply" in result.text
    assert "No file was changed." in result.text
    assert (project / "src" / "util.py").exists() and not (project / "docs").exists()
    assert "return 1" in (project / "src" / "app.py").read_text()


async def test_patch_v4a_relative_to_context_cwd(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    return 1\n+    return 3\n*** End Patch\n"
    )
    result = await call(make_context(project), "patch", mode="patch", patch=patch)
    assert result.ok, result.text
    assert "return 3" in (project / "src" / "app.py").read_text()


async def test_patch_that_changes_nothing_is_an_error(project: Path) -> None:
    noop = "--- a/src/util.py\n+++ b/src/util.py\n@@ -1,2 +1,2 @@\n def helper():\n-    pass\n+    pass\n"
    result = await call(make_context(project), "patch", mode="patch", patch=noop)
    assert not result.ok and "makes no changes" in result.text


async def test_patch_parse_error_is_reported(project: Path) -> None:
    result = await call(make_context(project), "patch", mode="patch", patch="not a patch at all")
    assert not result.ok and "no file changes found" in result.text


# --- search_files -----------------------------------------------------------------------------


async def test_search_files_through_the_registry(project: Path) -> None:
    ctx = make_context(project)
    result = await call(ctx, "search_files", pattern=r"def \w+", path="src")
    assert result.ok
    assert result.text.splitlines() == [
        "2 matching lines in 2 files:",
        "src/app.py:4:def main():",
        "src/util.py:1:def helper():",
    ]
    assert result.display == (TextDisplay(result.text, fence=""),)
    assert result.locations == (
        Location(str(project / "src" / "app.py"), 4),
        Location(str(project / "src" / "util.py"), 1),
    )
    files = await call(ctx, "search_files", pattern="*.py", target="files")
    assert files.text.splitlines()[1:] == ["src/app.py", "src/util.py"]
    alias = await call(ctx, "search_files", pattern="def", output_mode="files_only")
    assert alias.text.splitlines()[1:] == ["src/app.py", "src/util.py"]
    bad = await call(ctx, "search_files", pattern="def (")
    assert not bad.ok and "invalid regular expression" in bad.text


# --- presenters -------------------------------------------------------------------------------


def test_presenter_titles_and_absolute_locations(project: Path, tmp_path: Path) -> None:
    app = str(project / "src" / "app.py")
    assert title("read_file", project, path="src/app.py") == ("Read src/app.py", (Location(app, 1),))
    assert title("read_file", project, path="./src/app.py", offset=40, limit=41) == (
        "Read src/app.py (lines 40–80)",
        (Location(app, 40),),
    )
    outside = tmp_path / "other.txt"
    assert title("read_file", project, path="../other.txt")[0] == f"Read {outside}"
    assert title("write_file", project, path="src/new.py", content="") == (
        "Write src/new.py",
        (Location(str(project / "src" / "new.py")),),
    )
    assert (
        title("patch", project, mode="replace", path="src/app.py", old_string="a", new_string="b")[0]
        == "Edit src/app.py"
    )
    edit_title, locations = title("patch", project, mode="patch", patch=MULTI_FILE)
    assert edit_title == "Edit 3 files"
    assert locations[0] == Location(app, 4) and all(Path(loc.path).is_absolute() for loc in locations)
    single = "*** Begin Patch\n*** Update File: src/app.py\n-a\n+b\n*** End Patch"
    assert title("patch", project, mode="patch", patch=single)[0] == "Edit src/app.py"
    assert title("search_files", project, pattern="TODO", path="src")[0] == 'Search "TODO" in src'
    assert title("search_files", project, pattern="TODO")[0] == 'Search "TODO"'
    assert title("search_files", project, pattern="*.py", target="files")[0] == 'Find files "*.py"'
