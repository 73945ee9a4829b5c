"""The documentation stays true to the tree: every relative link in ``docs/*.md`` and the README
points at a file that exists (and at a heading there, when it names one), the index lists every
page, and the configuration page names every setting the code has."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from acp_hermes.config import Settings
from tests.support import REPO_ROOT

DOCS = REPO_ROOT / "docs"
DOCUMENTS = [*sorted(DOCS.glob("*.md")), REPO_ROOT / "README.md"]

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (links and headings in code are not links or headings)."""
    lines, fence = [], None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if match and (fence is None or match.group(1) == fence):
            fence = match.group(1) if fence is None else None
            continue
        if fence is None:
            lines.append(line)
    return lines


def anchors(text: str) -> set[str]:
    """GitHub's anchor for each heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    seen: Counter[str] = Counter()
    found = set()
    for line in _prose_lines(text):
        match = _HEADING.match(line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(2).strip().lower()).replace(" ", "-")
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return found


def relative_links(text: str) -> list[str]:
    """Link targets that are not URLs with a scheme (``https:``, ``mailto:``), outside code."""
    targets = []
    for line in _prose_lines(text):
        for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
            if not _SCHEME.match(match.group(1)):
                targets.append(match.group(1))
    return targets


def broken_links(document: Path) -> list[str]:
    """Each relative link of ``document`` that leads nowhere, with the reason."""
    problems = []
    for target in relative_links(document.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        resolved = (document.parent / path_part).resolve() if path_part else document
        if not resolved.exists():
            problems.append(f"{target}: no such file ({resolved})")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    assert broken_links(document) == []


def test_the_docs_link_to_each_other() -> None:
    """Not vacuous: the pages are there and carry links (so the test above checks something)."""
    pages = {path.name for path in DOCS.glob("*.md")}
    assert {"getting-started.md", "configuration.md", "permissions.md", "memory.md", "skills.md", "sessions.md",
            "mcp.md", "privacy.md", "troubleshooting.md", "architecture.md", "README.md"} <= pages
    assert sum(len(relative_links(path.read_text(encoding="utf-8"))) for path in DOCUMENTS) > 50


def test_the_index_lists_every_page() -> None:
    linked = {target.partition("#")[0] for target in relative_links((DOCS / "README.md").read_text(encoding="utf-8"))}
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    assert pages - linked == set()


def test_every_editable_install_is_the_strict_kind() -> None:
    """An editable install of a checkout is written as the README's, whose ``editable_mode=strict`` lets
    the type checker follow ``tools/`` and ``memory/`` under their installed names (pyproject.toml)."""
    found = [(path.name, line.strip()) for path in [*DOCUMENTS, *sorted((REPO_ROOT / "editor-configs").rglob("*.md"))]
             for line in path.read_text(encoding="utf-8").splitlines() if re.search(r"pip install (-q )?-e ", line)]
    assert len(found) >= 3  # README, architecture, getting-started at least: the check is not vacuous
    assert [(name, line) for name, line in found if "editable_mode=strict" not in line] == []


def test_configuration_names_every_setting() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in Settings.model_fields if f"`{name}`" not in text]
    assert missing == []


def test_the_link_checker_finds_broken_links_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## What \"always\" remembers\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n"
        "[ok](other.md) [anchor](other.md#what-always-remembers) [repeat](other.md#notes-1) [self](#page)\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) [own](#absent) [web](https://example.com/x.md)\n"
        "`[in code](missing-in-code.md)`\n"
        "```\n[in a fence](missing-in-fence.md)\n```\n"
    )
    assert broken_links(page) == [
        f"missing.md: no such file ({tmp_path / 'missing.md'})",
        "other.md#nowhere: no heading #nowhere in other.md",
        "#absent: no heading #absent in page.md",
    ]
