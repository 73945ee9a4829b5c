"""First end-to-end checks through the real stdio server (harness sanity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp_harness import running_agent
from tests.fake_anthropic import FakeAnthropic, text_reply, thinking_then_text


@pytest.mark.anyio
async def test_prompt_streams_text_and_ends_turn(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(thinking_then_text("pondering", "Hello from the fake model"), text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        stop = await agent.prompt(sid, "hi")
        assert stop == "end_turn"
        assert agent.agent_text(sid) == "Hello from the fake model"
        thoughts = agent.updates(sid, "agent_thought_chunk")
        assert "".join(t["content"]["text"] for t in thoughts) == "pondering"
        assert all(u.get("messageId") for u in agent.updates(sid, "agent_message_chunk"))
