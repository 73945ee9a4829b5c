"""An approved write lands where it was approved, even when the path changes under the prompt.

While the edit's permission prompt is open, a command (here: the permission callback itself)
swaps a workspace directory for a symlink to a directory outside. The approved write must not
follow it — neither the agent's own write nor the one it hands to an editor with fs support.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import EditorClient, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("editor_writes", [False, True], ids=["agent-writes", "editor-writes"])
async def test_a_directory_swapped_for_a_symlink_during_the_prompt_is_not_followed(
    tmp_path: Path, fake_anthropic: FakeAnthropic, editor_writes: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "workspace"
    sub = workspace / "sub"
    sub.mkdir(parents=True)

    def swap_then_allow(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str:
        shutil.rmtree(sub)
        sub.symlink_to(outside, target_is_directory=True)
        return next(o["optionId"] for o in options if o["kind"] == "allow_once")

    fake_anthropic.script(
        tool_reply("write_file", {"path": "sub/notes.txt", "content": "secret plans\n"}, id="toolu_write"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Notes"))
    client = EditorClient(policy=swap_then_allow)
    async with running_agent(tmp_path, fake_anthropic, client=client, workspace=workspace, fs=editor_writes) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "write notes") == "end_turn"
        call = check_tool_calls(agent, sid)["toolu_write"]

    assert len(client.permission_requests) == 1
    assert list(outside.iterdir()) == []
    assert client.writes == []
    assert call.status == "failed"
    result, is_error = tool_result(fake_anthropic, "toolu_write")
    assert is_error and "symlink" in result and "not made" in result
