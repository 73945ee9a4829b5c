"""``--log-level DEBUG`` tells the story of a turn, and keeps its secrets.

The real server runs at DEBUG (``ACP_HERMES_LOG_LEVEL``, as every spawned test server does) for one
turn with a tool call the user is asked about. Its log file has each step — the warm-up, the request
(model, message and tool counts, a token estimate), the response's first byte and first event, the
tool call (name, id), the permission outcome with its reason and the user's answer, the message's
stop reason and usage, the turn's end — and has neither the API key nor the prompt's text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acp_hermes.app.logs import LOG_FILE_NAME
from acp_hermes.config import Paths
from tests.support.acp_harness import EditorClient, choose, running_agent
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, text_reply, tool_reply

pytestmark = pytest.mark.anyio

PROMPT = "Please create notes.txt; the launch codes are tangerine-walrus-42"
CALL = "toolu_debuglog1"

WARM_UP = r"DEBUG acp_hermes\.core\.runtime: warm-up: model client, tools and loop ready after \d+ ms"
EXPECTED = [  # in this order
    r"DEBUG acp_hermes\.model\.provider: model request: model \S+, 1 messages, \d+ tools, ~\d+ tokens in \(estimate\)",
    r"DEBUG acp_hermes\.model\.provider: model response: HTTP 200 after \d+ ms \(request-id \S+\)",
    r"DEBUG acp_hermes\.model\.provider: model stream: first event \(message_start\) after \d+ ms",
    rf"DEBUG acp_hermes\.core\.loop: tool call {CALL}: write_file$",
    r"DEBUG acp_hermes\.model\.provider: model message: stop tool_use, 1 blocks \(1 tool calls\), tokens in \d+, "
    r"out \d+, cache read \d+, cache write \d+",
    rf"DEBUG acp_hermes\.permissions\.gate: permission for call {CALL} \(EditRequest, mode default\): ask — ",
    rf"DEBUG acp_hermes\.permissions\.gate: permission for call {CALL}: the user answered allow_once",
    rf"DEBUG acp_hermes\.core\.loop: tool call {CALL}: write_file completed in \d+ ms",
    r"DEBUG acp_hermes\.model\.provider: model request: model \S+, 3 messages, ",
    r"DEBUG acp_hermes\.model\.provider: model message: stop end_turn, 1 blocks \(0 tool calls\)",
    r"DEBUG acp_hermes\.core\.loop: turn end: end_turn after 2 model calls, 1 tools used; tokens in \d+, out \d+",
    r"DEBUG acp_hermes\.model\.provider: model request \(not streamed\): model \S+, 1 messages, 0 tools",  # title
]


async def test_a_debug_log_names_each_step_of_a_turn_and_no_secret(tmp_path: Path,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "notes.txt", "content": "tangerine\n"}, id=CALL),
        text_reply("Created."),
    )
    fake_anthropic.script_auxiliary(text_reply("Notes"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"ACP_HERMES_LOG_LEVEL": "DEBUG"}) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, PROMPT) == "end_turn"
        await agent.wait_for(lambda: len(fake_anthropic.server.requests) >= 3)  # the session's title too

    log = (Paths(agent.home).logs / LOG_FILE_NAME).read_text(encoding="utf-8")
    lines = log.splitlines()
    position = 0
    assert any(re.search(WARM_UP, line) for line in lines)
    for pattern in EXPECTED:
        found = next((n for n in range(position, len(lines)) if re.search(pattern, lines[n])), None)
        assert found is not None, f"no line after line {position} matches {pattern!r}"
        position = found + 1
    assert FAKE_API_KEY not in log
    assert "tangerine" not in log and "launch codes" not in log  # neither the prompt nor the file's text
