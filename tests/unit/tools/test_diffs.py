"""Unit tests of the pure patch logic: parsing, applying, replacing and fuzzy candidates."""

from __future__ import annotations

import pytest

from acp_hermes_tools.diffs import (
    FileEdit,
    PatchError,
    apply_hunks,
    apply_patch,
    closest_regions,
    detect_eol,
    first_changed_line,
    line_changes,
    parse_patch,
    parse_unified_diff,
    parse_v4a_patch,
    replace_text,
    split_lines,
    whitespace_insensitive_find,
)

TEN = "".join(f"line {n}\n" for n in range(1, 11))


def apply_to(text: str, patch: str, path: str = "f.txt") -> str:
    (file_patch,) = parse_patch(patch)
    edits = apply_patch([file_patch], {path: text})
    return edits[0].new_text if edits else text


# --- unified diffs -----------------------------------------------------------------------------


def test_unified_diff_with_several_hunks_applies_all_of_them() -> None:
    patch = """--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,3 @@
-line 1
+LINE ONE
 line 2
 line 3
@@ -7,3 +7,4 @@
 line 7
-line 8
+line eight
+line eight and a half
 line 9
"""
    expected = TEN.replace("line 1\n", "LINE ONE\n").replace("line 8\n", "line eight\nline eight and a half\n")
    assert apply_to(TEN, patch) == expected


def test_hunk_is_found_at_a_shifted_line() -> None:
    shifted = "new top\nanother\n" + TEN
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -5,2 +5,2 @@\n line 5\n-line 6\n+line six\n"
    assert apply_to(shifted, patch) == shifted.replace("line 6\n", "line six\n")
    earlier = TEN.replace("line 1\nline 2\nline 3\n", "")
    assert apply_to(earlier, patch) == earlier.replace("line 6\n", "line six\n")


def test_outward_search_picks_the_occurrence_nearest_the_stated_line() -> None:
    text = "x\nsame\nx\nx\nx\nx\nsame\nx\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -6,1 +6,1 @@\n-same\n+changed\n"
    assert apply_to(text, patch) == "x\nsame\nx\nx\nx\nx\nchanged\nx\n"


def test_later_hunks_account_for_lines_added_by_earlier_ones() -> None:
    text = "".join(f"{n}\n" for n in range(1, 31))
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -2,1 +2,4 @@\n 2\n+2a\n+2b\n+2c\n@@ -20,2 +23,1 @@\n 20\n-21\n"
    result = split_lines(apply_to(text, patch))
    assert result[1:5] == ["2", "2a", "2b", "2c"]
    assert "21" not in result and result[22] == "20"


def test_multi_file_patch_with_create_and_delete() -> None:
    patch = """diff --git a/src/a.py b/src/a.py
index 123..456 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1 +1 @@
-a = 1
+a = 2
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""
    patches = parse_patch(patch)
    assert [(p.action, p.path) for p in patches] == [
        ("update", "src/a.py"),
        ("create", "new.txt"),
        ("delete", "old.txt"),
    ]
    edits = apply_patch(patches, {"src/a.py": "a = 1\n", "new.txt": None, "old.txt": "bye\n"})
    assert edits == [
        FileEdit("src/a.py", "a = 1\n", "a = 2\n"),
        FileEdit("new.txt", None, "hello\nworld\n"),
        FileEdit("old.txt", "bye\n", None),
    ]


def test_crlf_file_keeps_crlf_line_endings() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n+two and a half\n three\n"
    assert apply_to(text, patch) == "one\r\nTWO\r\ntwo and a half\r\nthree\r\n"


def test_patch_text_with_crlf_applies_to_lf_file() -> None:
    patch = "--- a/f.txt\r\n+++ b/f.txt\r\n@@ -1 +1 @@\r\n-one\r\n+uno\r\n"
    assert apply_to("one\ntwo\n", patch) == "uno\ntwo\n"


def test_file_without_trailing_newline_keeps_it_that_way() -> None:
    text = "a\nb\nc"
    at_end = "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n"
    assert apply_to(text, at_end) == "a\nb\nC"
    appended = "--- a/f.txt\n+++ b/f.txt\n@@ -3 +3,2 @@\n c\n+d\n"
    assert apply_to(text, appended) == "a\nb\nc\nd"
    at_start = "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+A\n"
    assert apply_to(text, at_start) == "A\nb\nc"


def test_no_newline_marker_adds_or_removes_the_final_newline() -> None:
    add_newline = "--- a/f.txt\n+++ b/f.txt\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n"
    assert apply_to("a\nb", add_newline) == "a\nb\n"
    drop_newline = "--- a/f.txt\n+++ b/f.txt\n@@ -2 +2 @@\n-b\n+b\n\\ No newline at end of file\n"
    assert apply_to("a\nb\n", drop_newline) == "a\nb"


def test_new_file_without_final_newline() -> None:
    patch = "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
    (file_patch,) = parse_patch(patch)
    assert apply_patch([file_patch], {"n.txt": None})[0].new_text == "x\ny"


def test_miscounted_header_and_blank_context_line_still_apply() -> None:
    text = "def f():\n\n    return 1\n"
    # counts say 2 lines, there are 3; the empty context line lost its leading space
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n def f():\n\n-    return 1\n+    return 2\n"
    assert apply_to(text, patch, "f.py") == "def f():\n\n    return 2\n"


def test_hunk_without_line_numbers_is_searched_in_the_file() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ ... @@\n line 4\n-line 5\n+five\n"
    assert apply_to(TEN, patch) == TEN.replace("line 5\n", "five\n")


def test_markdown_fence_around_the_patch_is_ignored() -> None:
    patch = "```diff\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-line 1\n+first\n```\n"
    assert apply_to(TEN, patch).startswith("first\nline 2\n")


def test_failing_hunk_names_file_and_hunk_and_shows_expected_and_actual() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -3,2 +3,2 @@\n line 3\n-line four\n+line 4!\n"
    with pytest.raises(PatchError) as caught:
        apply_to(TEN, patch)
    message = str(caught.value)
    assert "f.txt: hunk 1 of 1 (@@ -3,2 +3,2 @@) does not apply" in message
    assert "    4|line four" in message  # expected, numbered from the stated line
    assert "The file has at line 3:" in message and "    4|line 4" in message


def test_failing_hunk_points_at_whitespace_only_differences() -> None:
    text = "def f():\n    if x:\n        return 1\n"
    patch = "--- a/f.py\n+++ b/f.py\n@@ -10,2 +10,2 @@\n  if x:\n-    return 1\n+    return 2\n"
    with pytest.raises(PatchError) as caught:
        apply_to(text, patch, "f.py")
    assert "lines 2–3" in str(caught.value)
    assert "differs only in whitespace" in str(caught.value)


def test_every_failing_file_is_reported_and_nothing_is_returned() -> None:
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-nope\n+x\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-line 1\n+ok\n"
        "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-also nope\n+y\n"
    )
    with pytest.raises(PatchError) as caught:
        apply_patch(parse_patch(patch), {"a.txt": "a\n", "b.txt": TEN, "c.txt": "c\n"})
    message = str(caught.value)
    assert "a.txt: hunk 1" in message and "c.txt: hunk 1" in message
    assert "b.txt" not in message


def test_creating_an_existing_file_or_updating_a_missing_one_fails() -> None:
    create = parse_patch("--- /dev/null\n+++ b/x.txt\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(PatchError, match="already exists"):
        apply_patch(create, {"x.txt": "there\n"})
    update = parse_patch("--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(PatchError, match="does not exist"):
        apply_patch(update, {"x.txt": None})


def test_additions_to_a_missing_file_create_it() -> None:
    # models often write an ordinary header instead of --- /dev/null for a new file
    patches = parse_patch("--- a/n.txt\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    assert apply_patch(patches, {"n.txt": None}) == [FileEdit("n.txt", None, "a\nb\n")]


@pytest.mark.parametrize(
    ("patch", "complaint"),
    [
        ("just some prose\n", "no file changes found"),
        ("@@ -1 +1 @@\n-a\n+b\n", "comes before any file header"),
        ("--- a/x\n+++ b/x\n@@ -one +1 @@\n-a\n+b\n", "malformed hunk header"),
        ("--- a/x\n+++ b/x\n", "not followed by any '@@' hunk"),
        ("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "two different files"),
        ("--- /dev/null\n+++ /dev/null\n", "/dev/null on both sides"),
    ],
)
def test_malformed_unified_diffs_are_clear_errors(patch: str, complaint: str) -> None:
    with pytest.raises(PatchError, match=complaint):
        parse_unified_diff(patch)


def test_git_rename_is_a_move() -> None:
    renamed = "diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n"
    (move,) = parse_patch(renamed)
    assert (move.action, move.path, move.new_path) == ("move", "old.py", "new.py")
    edits = apply_patch([move], {"old.py": "x\n", "new.py": None})
    assert edits == [FileEdit("old.py", "x\n", None), FileEdit("new.py", None, "x\n")]
    edited = renamed + "--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-x\n+y\n"
    (move,) = parse_patch(edited)
    assert apply_patch([move], {"old.py": "x\n", "new.py": None})[1].new_text == "y\n"


# --- V4A ---------------------------------------------------------------------------------------


def test_v4a_update_add_and_delete() -> None:
    patch = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    print("hi")
+    print("hello")
*** Add File: docs/new.md
+# Title
+
+Body
*** Delete File: old.txt
*** End Patch
"""
    app = 'import sys\n\ndef main():\n    print("hi")\n'
    patches = parse_patch(patch)
    assert [p.action for p in patches] == ["update", "create", "delete"]
    edits = apply_patch(patches, {"src/app.py": app, "docs/new.md": None, "old.txt": "x\n"})
    assert edits[0].new_text == app.replace('"hi"', '"hello"')
    assert edits[1] == FileEdit("docs/new.md", None, "# Title\n\nBody\n")
    assert edits[2] == FileEdit("old.txt", "x\n", None)


def test_v4a_anchor_selects_the_right_occurrence() -> None:
    text = "def a():\n    return 0\n\ndef b():\n    return 0\n"
    patch = "*** Begin Patch\n*** Update File: f.py\n@@ def b():\n-    return 0\n+    return 1\n*** End Patch"
    assert apply_to(text, patch, "f.py") == "def a():\n    return 0\n\ndef b():\n    return 1\n"


def test_v4a_addition_only_hunk_goes_after_its_anchor() -> None:
    text = "[a]\nx = 1\n[b]\ny = 2\n"
    patch = "*** Begin Patch\n*** Update File: c.ini\n@@ [a]\n+z = 3\n*** End Patch"
    assert apply_to(text, patch, "c.ini") == "[a]\nz = 3\nx = 1\n[b]\ny = 2\n"


def test_v4a_tolerates_whitespace_drift_and_missing_context_prefix() -> None:
    text = "def f():\n    a = 1   \n    b = 2\n"
    patch = "*** Begin Patch\n*** Update File: f.py\n    a = 1\n-    b = 2\n+    b = 3\n*** End Patch"
    assert apply_to(text, patch, "f.py") == "def f():\n    a = 1   \n    b = 3\n"


def test_v4a_trailing_blank_lines_are_not_context() -> None:
    patch = "*** Begin Patch\n*** Update File: f.txt\n-line 10\n+ten\n\n\n*** End Patch\n"
    assert apply_to(TEN, patch).endswith("line 9\nten\n")


def test_v4a_move_file_and_move_to() -> None:
    (move,) = parse_v4a_patch("*** Begin Patch\n*** Move File: a.txt -> b.txt\n*** End Patch")
    assert apply_patch([move], {"a.txt": "x\n", "b.txt": None}) == [
        FileEdit("a.txt", "x\n", None),
        FileEdit("b.txt", None, "x\n"),
    ]
    patch = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: c.txt\n-x\n+y\n*** End Patch"
    (move,) = parse_v4a_patch(patch)
    assert apply_patch([move], {"a.txt": "x\n", "c.txt": None})[1] == FileEdit("c.txt", None, "y\n")


def test_v4a_two_sections_on_one_file_apply_in_sequence() -> None:
    patch = "*** Begin Patch\n*** Update File: f.txt\n-line 1\n+one\n*** Update File: f.txt\n-one\n+uno\n*** End Patch"
    (edit,) = apply_patch(parse_patch(patch), {"f.txt": TEN})
    assert edit.old_text == TEN and edit.new_text is not None and edit.new_text.startswith("uno\n")


def test_v4a_keeps_crlf() -> None:
    patch = "*** Begin Patch\n*** Update File: f.txt\n a\n-b\n+B\n+B2\n*** End Patch"
    assert apply_to("a\r\nb\r\n", patch) == "a\r\nB\r\nB2\r\n"


@pytest.mark.parametrize(
    ("patch", "complaint"),
    [
        ("*** Begin Patch\nstray\n*** End Patch", "outside any"),
        ("*** Begin Patch\n*** Add File: n.txt\nno plus\n*** End Patch", "must start with '\\+'"),
        ("*** Begin Patch\n*** Update File: f.txt\n context only\n*** End Patch", "no '-' or '\\+' lines"),
        ("*** Begin Patch\n*** Move File: a.txt b.txt\n*** End Patch", "Move File: <from> -> <to>"),
        ("*** Begin Patch\n*** Delete File: a.txt\n-x\n*** End Patch", "takes no lines"),
        ("*** Begin Patch\n*** End Patch", "no '\\*\\*\\* Update File"),
    ],
)
def test_malformed_v4a_patches_are_clear_errors(patch: str, complaint: str) -> None:
    with pytest.raises(PatchError, match=complaint):
        parse_patch(patch)


def test_v4a_hunk_that_matches_nothing_reports_the_closest_text() -> None:
    text = "alpha\nbeta\ngamma\n"
    patch = "*** Begin Patch\n*** Update File: f.txt\n alpha\n-betta\n+delta\n*** End Patch"
    with pytest.raises(PatchError) as caught:
        apply_to(text, patch)
    assert "f.txt: hunk 1 of 1" in str(caught.value)
    assert "Closest text: lines 1–2" in str(caught.value)


def test_v4a_add_over_existing_file_fails() -> None:
    patches = parse_patch("*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch")
    with pytest.raises(PatchError, match="already exists"):
        apply_patch(patches, {"x.txt": "old\n"})


# --- exact replace -----------------------------------------------------------------------------


def test_replace_text_replaces_a_unique_match() -> None:
    result = replace_text("f", "a = 1\nb = 2\n", "b = 2", "b = 3")
    assert (result.text, result.count) == ("a = 1\nb = 3\n", 1)


def test_replace_text_with_several_matches_lists_their_lines() -> None:
    text = "x = 1\ny = 2\nx = 1\nz\nx = 1\n"
    with pytest.raises(PatchError, match=r"occurs 3 times in f \(lines 1, 3, 5\)"):
        replace_text("f", text, "x = 1", "x = 9")
    result = replace_text("f", text, "x = 1", "x = 9", replace_all=True)
    assert result.text == text.replace("x = 1", "x = 9") and result.count == 3


def test_replace_text_rejects_empty_and_identical_strings() -> None:
    with pytest.raises(PatchError, match="identical"):
        replace_text("f", "abc", "b", "b")
    with pytest.raises(PatchError, match="empty"):
        replace_text("f", "abc", "", "x")


def test_replace_text_not_found_shows_candidates_and_whitespace_hint() -> None:
    text = "".join(f"# filler {n}\n" for n in range(40)) + "def handler(event):\n\treturn event.body\n"
    with pytest.raises(PatchError) as caught:
        replace_text("app.py", text, "def handler(event):\n    return event.body", "x")
    message = str(caught.value)
    assert "old_string was not found in app.py" in message
    assert "at line 41 except for whitespace" in message
    assert "lines 41–42" in message and "    41|def handler(event):" in message


def test_replace_text_in_crlf_file_matches_lf_strings_and_keeps_crlf() -> None:
    result = replace_text("f", "a\r\nb\r\nc\r\n", "a\nb\n", "A\nB\nB2\n")
    assert result.text == "A\r\nB\r\nB2\r\nc\r\n"


# --- helpers -----------------------------------------------------------------------------------


def test_closest_regions_ranks_the_most_similar_window_first() -> None:
    haystack = [f"filler line {n}" for n in range(500)]
    haystack[300:303] = ["def compute(a, b):", "    total = a + b", "    return total"]
    candidates = closest_regions(haystack, ["def compute(a, b):", "    total = a+b", "    return total"])
    assert candidates[0].start == 301
    assert candidates[0].lines == ("def compute(a, b):", "    total = a + b", "    return total")
    assert candidates[0].whitespace_only
    assert closest_regions([], ["x"]) == [] and closest_regions(["x"], []) == []


def test_closest_regions_ignores_unrelated_text() -> None:
    assert closest_regions(["aaaa", "bbbb"], ["completely different words here"]) == []


def test_whitespace_insensitive_find() -> None:
    assert whitespace_insensitive_find("x\n  foo ( a,b )\n", "foo(a, b)") == 4
    assert whitespace_insensitive_find("abc", "xyz") is None


def test_line_helpers() -> None:
    assert split_lines("a\r\nb\nc") == ["a", "b", "c"]
    assert detect_eol("a\r\nb\r\n") == "\r\n" and detect_eol("a\nb\r\n") == "\r\n" and detect_eol("a\nb\nc\r\n") == "\n"
    assert first_changed_line("a\nb\nc\n", "a\nB\nc\n") == 2
    assert first_changed_line(None, "new\n") == 1
    assert first_changed_line("a\n", "a\nb\n") == 2
    assert line_changes("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)
    assert line_changes("a\n", None) == (0, 1)


def test_apply_hunks_directly_reports_its_label() -> None:
    (file_patch,) = parse_patch("--- a/q\n+++ b/q\n@@ -1 +1 @@\n-missing\n+x\n")
    with pytest.raises(PatchError, match=r"^label\.txt: hunk 1 of 1"):
        apply_hunks("label.txt", "present\n", file_patch.hunks)
