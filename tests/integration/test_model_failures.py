"""What the user sees when the model API fails, through the real stdio server.

Auth and request errors become a clear agent message and a normal end of turn; transient failures
(429, 5xx, dropped connections) are retried with backoff until the budget runs out; a stream that
fails after text was shown is not repeated; a cancel aborts the backoff sleep.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_hermes.testing.scripted_model import MessageReply, StreamFailure, TextBlock
from tests.support.acp_harness import AgentProcess, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, drop_connection, error_reply, text_reply

FAST_RETRIES = "max_retries: 3\nretry_base_delay: 0.01\nretry_max_delay: 0.05\n"



async def prompt_and_read(agent: AgentProcess, session_id: str, text: str) -> tuple[str, str]:
    """Run one prompt; return its stop reason and the agent text shown during it."""
    before = len(agent.updates(session_id, "agent_message_chunk"))
    stop = await agent.prompt(session_id, text)
    shown = "".join(u["content"]["text"] for u in agent.updates(session_id, "agent_message_chunk")[before:])
    return stop, shown


@pytest.mark.anyio
async def test_auth_and_request_errors_become_a_message_and_the_session_recovers(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        error_reply(401, message="invalid x-api-key"),
        text_reply("Now it works."),
        error_reply(400, message="messages.0.content: something the API disliked"),
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        stop, shown = await prompt_and_read(agent, sid, "hello")
        assert stop == "end_turn"
        assert "API key" in shown and "401" in shown
        await agent.wait_for_update(sid, "session_info_update")

        assert await prompt_and_read(agent, sid, "try again") == ("end_turn", "Now it works.")

        stop, shown = await prompt_and_read(agent, sid, "a bad request")
        assert stop == "end_turn"
        assert "400" in shown and "something the API disliked" in shown
        assert agent.process.returncode is None
    assert len(fake_anthropic.stream_requests) == 3  # neither 401 nor 400 was retried


@pytest.mark.anyio
async def test_transient_failures_are_retried_until_the_budget_runs_out(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", FAST_RETRIES)
    fake_anthropic.script(
        error_reply(529),
        error_reply(503),
        drop_connection(),
        text_reply("Got through in the end."),
        error_reply(429, retry_after=0.2),
        text_reply("Rate limit passed."),
        *[error_reply(503) for _ in range(4)],
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await prompt_and_read(agent, sid, "first") == ("end_turn", "Got through in the end.")
        assert len(fake_anthropic.stream_requests) == 4
        await agent.wait_for_update(sid, "session_info_update")

        assert await prompt_and_read(agent, sid, "second") == ("end_turn", "Rate limit passed.")
        assert len(fake_anthropic.stream_requests) == 4 + 2

        stop, shown = await prompt_and_read(agent, sid, "third")
        assert stop == "end_turn"
        assert "503" in shown
        assert len(fake_anthropic.stream_requests) == 6 + 4  # the first try and max_retries (3) retries
    assert fake_anthropic.unused_replies == 0


@pytest.mark.anyio
async def test_stream_failing_after_text_is_not_retried_and_cancel_aborts_a_backoff(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    # message_start, content_block_start, ping, two of three text deltas, then an error event
    broken = MessageReply([TextBlock("Half an answer, then", chunks=3)],
                          failure=StreamFailure(after_events=5, error_type="overloaded_error", message="Overloaded"))
    fake_anthropic.script(broken, error_reply(529, retry_after=30))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        stop, shown = await prompt_and_read(agent, sid, "answer me")
        assert stop == "end_turn"
        assert shown.startswith("Half an answe") and "r, then" not in shown  # two of the three deltas
        assert "stream broke off" in shown and "Overloaded" in shown
        assert len(fake_anthropic.stream_requests) == 1  # what the user saw is never streamed twice
        await agent.wait_for_update(sid, "session_info_update")

        async with anyio.create_task_group() as group:
            result: dict[str, str] = {}
            answered = anyio.Event()

            async def run() -> None:
                result["stop"] = await agent.prompt(sid, "wait for it")
                answered.set()

            group.start_soon(run)
            await fake_anthropic.wait_for_request_async(3)  # the 529 arrived; a 30 s back-off begins
            with anyio.fail_after(10):  # far below the 30 s the server asked for
                await agent.conn.cancel(session_id=sid)
                await answered.wait()
        assert result["stop"] == "cancelled"
        assert len(fake_anthropic.stream_requests) == 2  # no retry after the cancel
