"""A tool is listed once, in the manifest, and says the rest itself: a probe tool added there with its
traits reaches the system prompt, a delegated child's toolset, the learning loop's review, the memory
flush before a compaction and the subdirectory hints, with nothing else changed."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

import acp_hermes_tools
from acp_hermes.core.delegation import description, tool_names_for
from acp_hermes.core.hints import SubdirectoryHintTracker
from acp_hermes.core.review import Nudges
from acp_hermes.core.user_prompt import TextPart
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.registry import Access, Guidance, Tool, ToolResult
from tests.support.fake_provider import text, tool_calls
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio
PROBE_LINE = "Probe a folder with `probe_notes` before you guess what is in it."


class Probe:
    """The probe tool and the arguments of each call it ran."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.tool = Tool(
            name="probe_notes", description="Notes about a folder.", handler=self._run, kind="read",
            access=Access.READ,
            schema={"type": "object", "properties": {"folder": {"type": "string"}}, "additionalProperties": False},
            guidance=Guidance(25, PROBE_LINE), toolsets=("search",), reviewed=True, flushed=True,
            path_args=("folder",),
        )

    async def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(args)
        return ToolResult("No notes.")


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[Probe]:
    """The manifest with the probe tool added last (the runtime's registry is built from it on first use)."""
    added, declared = Probe(), acp_hermes_tools.core_tools
    monkeypatch.setattr(acp_hermes_tools, "core_tools", lambda: (*declared(), added.tool))
    yield added


async def test_its_guidance_line_is_in_the_system_prompt_where_its_order_puts_it(env: Env, probe: Probe) -> None:
    session = await env.manager().create(env.cwd, ())
    prompt = session.state.system_prompt
    assert f"- {PROBE_LINE}\n" in prompt
    assert prompt.index("`search_files`") < prompt.index(PROBE_LINE) < prompt.index("Prefer `patch`")  # 20 < 25 < 30
    assert "probe_notes" in session.services.registry.names


async def test_a_child_given_its_toolset_gets_it_and_the_delegate_tool_says_so(env: Env, probe: Probe) -> None:
    session = await env.manager().create(env.cwd, ())
    available = session.services.base_tool_names()
    assert tool_names_for(["search"], available, may_delegate=False) == {"search_files", "probe_notes"}
    assert "probe_notes" not in tool_names_for(["file", "terminal"], available, may_delegate=False)
    assert "search (search_files, probe_notes)" in description()


async def test_the_review_offers_it_after_the_tools_it_had(env: Env, probe: Probe) -> None:
    reviews: list[Coroutine[Any, Any, None]] = []

    def spawn(job: Coroutine[Any, Any, None]) -> None:
        reviews.append(job) if getattr(job, "__name__", "") == "_review" else job.close()

    session = await env.manager(spawn=spawn).create(env.cwd, ())
    session.services.nudges = Nudges(memory_interval=1, skill_interval=0)
    env.provider.script(text("Hello."))
    assert await session.prompt([TextPart("hi")]) == "end_turn"
    env.provider.script(text("Nothing to save."))
    await reviews[0]
    assert [tool["name"] for tool in env.provider.bodies[-1]["tools"]] == [
        "memory", "skills_list", "skill_view", "skill_manage", "probe_notes"]


async def test_the_memory_flush_runs_its_calls_and_no_other_tools(env: Env, probe: Probe) -> None:
    session = await env.manager().create(env.cwd, ())
    env.provider.script(*(text(f"answer {n} " + "detail " * 200) for n in range(12)))
    for n in range(12):
        assert await session.prompt([TextPart(f"question {n} " + "context " * 200)]) == "end_turn"
    (env.cwd / "notes.txt").write_text("kept\n")
    env.provider.script(tool_calls(("probe_notes", {"folder": "src"}), ("read_file", {"path": "notes.txt"})))
    env.provider.script_auxiliary("## Goal\nProbe.")
    assert (await session.compact()).done
    assert probe.calls == [{"folder": "src"}]
    flushed = [e.name for e in env.log.events if getattr(e, "name", None) in ("probe_notes", "read_file")]
    assert flushed == ["probe_notes"]


def test_hints_read_the_paths_its_arguments_name(tmp_path: Path, probe: Probe) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "AGENTS.md").write_text("docs rules")
    tracker = SubdirectoryHintTracker(tmp_path)
    assert tracker.check_tool_call("probe_notes", {"path": "docs/a.md"}) == ""  # not one of its path arguments
    assert "docs rules" in tracker.check_tool_call("probe_notes", {"folder": "docs"})
