"""No git configuration of a repository ever runs on the agent's behalf (issue 29, point 5), through the real
stdio server.

For each program-running key (``tests/support/planted_git.py``), a workspace repository names a program
that leaves a marker; a whole session then searches (no ripgrep on PATH, so the fallback lists files with
``git ls-files``), edits (a checkpoint snapshot), and rolls back (the question shows the diffs read from
the store, then the store restores): the marker never appears. Afterwards the same repository, with git
run plainly, runs the program: the plant is real.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.acp_harness import EditorClient, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.planted_git import PLANTS, Plant, program, refusing_http_server, repository, run
from tests.support.tool_checks import tool_result

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: nothing to plant"),
]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with refusing_http_server() as url:
        yield url


@pytest.mark.parametrize("plant", PLANTS, ids=[plant.key for plant in PLANTS])
async def test_a_planted_key_never_runs_in_a_session_that_searches_edits_and_rolls_back(
        tmp_path: Path, fake_anthropic: FakeAnthropic, plant: Plant, http_url: str) -> None:
    marker = tmp_path / "RAN"
    git = shutil.which("git") or "/usr/bin/git"
    only_git = tmp_path / "bin"  # no ripgrep on PATH: search_files lists files with git
    only_git.mkdir()
    (only_git / "git").symlink_to(git)
    workspace = repository(tmp_path / "workspace")
    plant.plant(workspace, program(tmp_path), http_url)
    fake_anthropic.script(
        tool_reply("search_files", {"pattern": "needle"}, id="toolu_search"),
        tool_reply("write_file", {"path": "a.txt", "content": "two\n"}, id="toolu_write"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Planted"))
    client = EditorClient()  # allows each tool call, and the rollback, once
    async with running_agent(tmp_path, fake_anthropic, client=client, workspace=workspace,
                             env={"PATH": str(only_git)}) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "find the needle, then edit") == "end_turn"
        assert (workspace / "a.txt").read_text() == "two\n"
        assert await agent.prompt(sid, "/rollback 1") == "end_turn"
    assert "keep.txt" in tool_result(fake_anthropic, "toolu_search")[0]
    assert (workspace / "a.txt").read_text() == "one\n"  # restored from the store
    [question] = [q for q in client.permission_requests if q["toolCall"]["title"].startswith("Roll back")]
    [diff] = [c for c in question["toolCall"]["content"] if c["type"] == "diff"]
    assert (Path(diff["path"]).name, diff["oldText"], diff["newText"]) == ("a.txt", "two\n", "one\n")
    assert not marker.exists()

    plant.before(workspace)
    run([git, *plant.trigger], workspace, tty=plant.tty)
    assert marker.exists()  # the same repository, with git run plainly, runs the program
