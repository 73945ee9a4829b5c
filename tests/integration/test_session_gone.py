"""A session deleted by another process while an editor still has it open: the next request on it
answers the protocol's "not found" error (-32002), not an internal error, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from tests.integration.test_cli import run_cli
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.anyio

RESOURCE_NOT_FOUND = -32002


@pytest.mark.parametrize("change", ["set_config_option", "set_session_mode"])
async def test_a_request_on_a_session_deleted_elsewhere_is_not_found(
    tmp_path: Path, fake_anthropic: FakeAnthropic, change: str
) -> None:
    home = tmp_path / "hermes-home"
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        await agent.wait_for_update(sid, "available_commands_update")  # built and stored, as an open thread is
        deleted = run_cli("sessions", "delete", sid, "--yes", home=home)  # another process
        assert deleted.returncode == 0, deleted.stderr

        with pytest.raises(RequestError) as caught:
            if change == "set_config_option":
                await agent.conn.set_config_option(config_id="mode", session_id=sid, value="accept-edits")
            else:
                await agent.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        assert caught.value.code == RESOURCE_NOT_FOUND, caught.value
        assert str(caught.value) == "Resource not found"
        assert caught.value.data == {"sessionId": sid, "details": f"no session {sid!r}"}

        other = await agent.new_session()  # still serving
        changed = await agent.conn.set_config_option(config_id="mode", session_id=other, value="accept-edits")
        mode = next(option for option in changed.config_options if option.id == "mode")
        assert mode.current_value == "accept-edits"
