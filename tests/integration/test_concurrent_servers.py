"""Two server processes sharing one HERMES_HOME (two editor windows) append to one state.db at once:
afterwards every message of every session is there, in order, and each session loads in the other
process and continues with its whole history.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_hermes.testing.scripted_model import ModelRequest, Reply
from acp_hermes_memory.session_db import SessionDB
from tests.support.acp_harness import AgentProcess, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

SESSIONS_PER_SERVER = 2
PROMPTS_PER_SESSION = 8
ROWS_PER_PROMPT = 4  # user, assistant with a tool call, tool result, final assistant answer
MESSAGES_PER_PROMPT = 4  # user, assistant, user (tool_result), assistant


def respond(request: ModelRequest) -> Reply:
    """Stateless script: a todo call for a fresh prompt, then an answer quoting it."""
    body = request.body
    last = body["messages"][-1]["content"]
    if any(block.get("type") == "tool_result" for block in last):
        prompt = next(
            m["content"][0]["text"] for m in reversed(body["messages"])
            if m["role"] == "user" and m["content"][0].get("type") == "text"
        )
        return text_reply(f"answer to {prompt}")
    todos = [{"id": "1", "content": f"work on {last[0]['text']}", "status": "in_progress"}]
    return tool_reply("todo", {"todos": todos})


def prompt_text(server: str, session: int, number: int) -> str:
    return f"server {server} session {session} prompt {number}"


async def run_prompts(agent: AgentProcess, server: str, session: int, session_id: str, numbers: range) -> None:
    for number in numbers:
        assert await agent.prompt(session_id, prompt_text(server, session, number)) == "end_turn"


@pytest.mark.anyio
async def test_two_servers_appending_to_one_database_lose_nothing(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # Per server: two requests per prompt (its own sessions' and, after the cross-loads, one more
    # prompt in each of the other server's sessions) and one title per session it created.
    turn_requests = SESSIONS_PER_SERVER * (PROMPTS_PER_SESSION + 1) * 2
    requests_per_server = turn_requests + SESSIONS_PER_SERVER
    with FakeAnthropic() as fake_a, FakeAnthropic() as fake_b:
        for fake in (fake_a, fake_b):
            fake.script(*[respond] * turn_requests)
            fake.script_auxiliary(*[text_reply("Concurrent work")] * SESSIONS_PER_SERVER)
        async with (
            running_agent(tmp_path, fake_a, home=home, workspace=workspace) as server_a,
            running_agent(tmp_path, fake_b, home=home, workspace=workspace) as server_b,
        ):
            servers = {"a": server_a, "b": server_b}
            sessions: dict[tuple[str, int], str] = {}
            for name, agent in servers.items():
                for number in range(SESSIONS_PER_SERVER):
                    sessions[name, number] = await agent.new_session()
            # One exchange each first, so both processes have their model client ready and the
            # remaining prompts of all four sessions really run at the same time.
            async with anyio.create_task_group() as group:
                for (name, number), session_id in sessions.items():
                    group.start_soon(run_prompts, servers[name], name, number, session_id, range(1))
            async with anyio.create_task_group() as group:
                for (name, number), session_id in sessions.items():
                    group.start_soon(
                        run_prompts, servers[name], name, number, session_id, range(1, PROMPTS_PER_SESSION)
                    )

            expected_rows = PROMPTS_PER_SESSION * ROWS_PER_PROMPT
            with SessionDB(home / "acp-hermes" / "state.db") as db:
                records, _ = db.list_sessions(include_empty=True)
                assert {record.id for record in records} == set(sessions.values())
                for (name, number), session_id in sessions.items():
                    rows = db.messages(session_id)
                    assert len(rows) == expected_rows
                    record = db.get_session(session_id)
                    assert record is not None
                    assert record.message_count == expected_rows
                    assert record.tool_call_count == PROMPTS_PER_SESSION
                    for prompt in range(PROMPTS_PER_SESSION):
                        text = prompt_text(name, number, prompt)
                        user, call, result, answer = rows[prompt * ROWS_PER_PROMPT : (prompt + 1) * ROWS_PER_PROMPT]
                        assert (user.role, user.content) == ("user", text)
                        assert call.role == "assistant" and call.tool_calls and call.tool_calls[0]["name"] == "todo"
                        assert result.role == "tool" and result.tool_call_id == call.tool_calls[0]["id"]
                        assert (answer.role, answer.content) == ("assistant", f"answer to {text}")

            # Each session loads in the *other* process, replays everything and continues.
            for (name, number), session_id in sessions.items():
                other = servers["b" if name == "a" else "a"]
                await other.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
                replayed = other.updates(session_id)
                users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
                assert users == [prompt_text(name, number, prompt) for prompt in range(PROMPTS_PER_SESSION)]
                calls = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
                assert len(calls) == PROMPTS_PER_SESSION and all(c["status"] == "completed" for c in calls)
                assert len([u for u in replayed if u["sessionUpdate"] == "plan"]) == PROMPTS_PER_SESSION

                other_fake = fake_b if name == "a" else fake_a
                before = len(other_fake.requests)
                await run_prompts(other, name, number, session_id, range(PROMPTS_PER_SESSION, PROMPTS_PER_SESSION + 1))
                continued = next(r for r in other_fake.requests[before:] if r.get("stream"))
                assert len(continued["messages"]) == PROMPTS_PER_SESSION * MESSAGES_PER_PROMPT + 1
        # Every request was one the script foresaw: no failed model call was retried along the way.
        assert fake_a.unused_replies == fake_b.unused_replies == 0
        assert len(fake_a.requests) == len(fake_b.requests) == requests_per_server
