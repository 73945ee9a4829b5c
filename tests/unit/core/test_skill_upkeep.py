"""The core's side of skills' upkeep: archived skills a prompt names, what `/skills` shows and does,
the stale mark in the index, and the words of a rollback that puts skills back."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from acp_hermes.config import Paths
from acp_hermes.core.review import curation_list
from acp_hermes.core.rollback import _allow_label
from acp_hermes.core.skill_upkeep import archived_matches, listing_lines, steer
from acp_hermes.core.system_prompt import PromptInputs, build_system_prompt
from acp_hermes_memory.skills import SkillStore
from tests.support.skills import put

T0 = 1_800_000_000.0


def skill_md(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n"


@pytest.fixture
def store(tmp_path: Path) -> SkillStore:
    return SkillStore(tmp_path / "skills", platform="linux", history=tmp_path / "history.jsonl", clock=lambda: T0)


def archived(store: SkillStore, name: str, description: str) -> None:
    store.create(name, skill_md(name, description))
    store.archive(name)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("please rotate the logs of the api service", ["rotate-logs"]),  # every name word, stemmed
        ("Rotating LOGS again", ["rotate-logs"]),
        ("rotate the tyres", []),  # only one word of the name
        ("triage these bug reports", ["triage"]),  # a one-word name and a word of its description
        ("triage my inbox", []),  # a one-word name alone is not close enough
        ("nothing related", []),
    ],
)
def test_an_archived_skill_is_offered_when_a_prompt_names_it_closely(store: SkillStore, prompt: str,
                                                                     expected: list[str]) -> None:
    archived(store, "rotate-logs", "Rotate and compress the service logs.")
    archived(store, "triage", "Sort incoming bug reports by severity.")
    assert [skill.name for skill in archived_matches(store, prompt)] == expected


def test_skills_lists_state_pin_use_and_the_archived_and_steers_them(store: SkillStore, tmp_path: Path) -> None:
    put(tmp_path / "skills", "mine/SKILL.md", skill_md("mine", "My own notes."))
    store.create("deploy", skill_md("deploy", "Ship the app."))
    archived(store, "old", "An old one.")
    store.record_use(store.find("deploy"))
    assert steer(store, "pin", "deploy", "s-1") == "Pinned `deploy`: it never goes stale nor is archived."
    lines = listing_lines(store)
    assert lines is not None
    day = f"{datetime.fromtimestamp(T0):%Y-%m-%d}"
    assert f"- `deploy` — Ship the app. · pinned · 1 use, last {day} · by the agent" in lines
    assert "- `mine` — My own notes. · never used · yours" in lines
    assert "- `old` — An old one." in lines
    assert steer(store, "archive", "nope", "s-1").startswith("Nothing changed: No skill named 'nope'")
    assert steer(store, "restore", "old", "s-1").startswith("Restored `old` to ")
    assert store.history is not None and store.history.entries("old")[-1].by == "user"
    assert steer(store, "unpin", "deploy", None).startswith("Unpinned")


def test_the_curators_list_names_only_the_agents_skills_least_used_first(store: SkillStore, tmp_path: Path) -> None:
    put(tmp_path / "skills", "mine/SKILL.md", skill_md("mine", "My own notes."))
    store.create("used", skill_md("used", "Often used."))
    store.create("idle", skill_md("idle", "Never used."))
    for _ in range(3):
        store.record_use(store.find("used"))
    listed = curation_list(store)
    assert listed.index("- idle: Never used. [0 uses, last never]") < listed.index("- used: Often used. [3 uses")
    assert "mine" not in listed


def test_a_stale_skill_is_marked_in_the_index(tmp_path: Path) -> None:
    prompt = build_system_prompt(PromptInputs(
        paths=Paths(tmp_path / "home"), cwd=tmp_path, session_id="s", now=datetime.now().astimezone(),
        system_message=None, memory_block="", tool_names=frozenset({"skill_view"}),
        skills=[("old", None, "An old one.", "stale"), ("new", None, "A new one.", "")]))
    assert "- old: An old one. (stale)\n- new: A new one." in prompt


def test_a_rollbacks_one_way_to_allow_names_the_skill_files_too() -> None:
    assert _allow_label(2, False) == "Restore 2 files"
    assert _allow_label(0, False, 1) == "Restore 1 skill file"
    assert _allow_label(1, True, 2) == "Restore 1 file and 2 skill files and rewind the conversation"
    assert _allow_label(0, True) == "Rewind the conversation"
