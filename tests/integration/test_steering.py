"""Queueing and steering through the real stdio server: prompts that wait their turn in order, words
sent into a running turn (``_session/steering``, ``/steer``) that the very next model request
carries, ``/queue``, and a steered turn shown again by ``session/load``.

The fake model refuses histories the real API refuses, so every request it answers is a valid one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from acp_hermes.core.turn_input import STEER_NOTE
from tests.support.acp_harness import AgentProcess, EditorClient, Prompts, PromptTask, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, slow_text_reply, text_reply, texts_of, tool_reply

pytestmark = pytest.mark.anyio

STEER = "Name it b.txt instead"
WAIT = 10.0


class HeldPermissions(EditorClient):
    """An editor whose user takes their time: each permission question waits for ``go``, then is allowed."""

    def __init__(self) -> None:
        super().__init__()
        self.go = anyio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permission_asked.set()
        await self.go.wait()
        return await super().request_permission(options, session_id, tool_call, **kwargs)


async def steer(agent: AgentProcess, sid: str, text: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    if meta:
        params["_meta"] = {"steering": meta}
    answer: dict[str, Any] = await agent.conn.ext_method("session/steering", params)
    return answer


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without their cache markers (which move to the newest blocks on every request)."""
    return [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
            for m in messages]


def chunk_text(update: dict[str, Any]) -> str | None:
    """A message chunk's text (None for any other update)."""
    content = update.get("content")
    return content.get("text") if isinstance(content, dict) else None


async def steered_write(agent: AgentProcess, client: HeldPermissions, fake: FakeAnthropic, text: str = STEER, *,
                        cancel: bool = False) -> tuple[str, str | None]:
    """A turn whose write waits for permission; the user steers meanwhile (and cancels, if ``cancel``),
    then allows it. The session and how the turn ended."""
    fake.script(tool_reply("write_file", {"path": "a.txt", "content": "one\n"}), text_reply("Noted, b.txt next."))
    fake.script_auxiliary(text_reply("A title"))
    sid = await agent.new_session()
    task = PromptTask(agent, sid)
    async with anyio.create_task_group() as group:
        group.start_soon(task.run, "write a.txt")
        with anyio.fail_after(WAIT):
            await client.permission_asked.wait()
        assert await steer(agent, sid, text) == {"outcome": "injected"}
        assert len(fake.stream_requests) == 1  # nothing extra was asked of the model
        if cancel:
            await agent.conn.cancel(session_id=sid)
        client.go.set()
    return sid, task.stop_reason


async def test_initialize_advertises_queueing_and_steering(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    async with running_agent(tmp_path, fake_anthropic) as agent:
        init = next(m["result"] for m in agent.sent() if isinstance(m.get("result"), dict)
                    and "agentCapabilities" in m["result"])
    assert init["agentCapabilities"]["_meta"]["acp-hermes"]["promptQueueing"] is True
    assert init["_meta"]["steering"]["supported"] is True
    assert init["_meta"]["steering"]["idlePromptRequired"] is True
    assert init["agentCapabilities"]["_meta"]["steering"] == init["_meta"]["steering"]


async def test_a_steer_sent_while_a_tool_runs_reaches_the_very_next_request_and_is_replayed_there(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = HeldPermissions()
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid, stop = await steered_write(agent, client, fake_anthropic)
        assert stop == "end_turn"
        updates = agent.updates(sid)

    first, second = fake_anthropic.stream_requests  # no extra request
    carried = second["messages"][-1]
    assert carried["role"] == "user"
    assert [b["type"] for b in carried["content"]] == ["tool_result", "text", "text"]
    assert [b["text"] for b in carried["content"][1:]] == [STEER_NOTE, STEER]
    assert unmarked(second["messages"])[0] == unmarked(first["messages"])[0]  # nothing before it changed
    assert (tmp_path / "workspace" / "a.txt").read_text() == "one\n"  # the running call finished as it was

    # The editor shows it as the user's message where the model read it: after the call, before the answer.
    kinds = [(u["sessionUpdate"], u.get("status"), chunk_text(u)) for u in updates]
    completed = next(n for n, k in enumerate(kinds) if k[:2] == ("tool_call_update", "completed"))
    shown = kinds.index(("user_message_chunk", None, STEER))
    answered = next(n for n, k in enumerate(kinds) if k[0] == "agent_message_chunk")
    assert completed < shown < answered

    # session/load in another process shows it there again, and sends the same history on.
    fake_anthropic.script(text_reply("Still here."))
    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        replayed = [(u["sessionUpdate"], chunk_text(u)) for u in loaded.updates(sid)
                    if u["sessionUpdate"] in ("user_message_chunk", "tool_call", "agent_message_chunk")]
        assert replayed == [("user_message_chunk", "write a.txt"), ("tool_call", None),
                            ("user_message_chunk", STEER), ("agent_message_chunk", "Noted, b.txt next.")]
        assert await loaded.prompt(sid, "and now?") == "end_turn"

    steered, after_load = fake_anthropic.stream_requests[1:]
    # The reloaded history is the one sent live, byte for byte: the cached prefix still matches.
    assert unmarked(after_load["messages"][:3]) == unmarked(steered["messages"])


async def test_a_steer_sent_while_the_model_answers_gets_one_more_request(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(slow_text_reply(40, 0.05, text="A long first answer, streamed slowly."),
                          text_reply("Adjusted."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "explain")
            await agent.wait_for(lambda: bool(agent.updates(sid, "agent_message_chunk")))
            assert await steer(agent, sid, "shorter please") == {"outcome": "injected"}
        assert task.stop_reason == "end_turn"
        assert agent.agent_text(sid).endswith("Adjusted.")
    second = fake_anthropic.stream_requests[1]
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert texts_of(second["messages"][-1]["content"]) == [STEER_NOTE, "shorter please"]


async def test_steering_an_idle_session_starts_a_turn_or_answers_as_asked(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("Started by a steer."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await steer(agent, sid, "wait", idleBehavior="promptRequired") == {
            "outcome": "promptRequired", "reason": "noRunningTurn"}
        assert await steer(agent, sid, "wait", idleBehavior="fail") == {"outcome": "failed", "reason": "noRunningTurn"}
        assert fake_anthropic.stream_requests == []  # neither took anything
        with pytest.raises(RequestError) as refused:
            await steer(agent, sid, "wait", idleBehavior="whenever")
        assert refused.value.code == -32602
        with pytest.raises(RequestError) as empty:
            await agent.conn.ext_method("session/steering", {"sessionId": sid, "prompt": []})
        assert empty.value.code == -32602

        assert await steer(agent, sid, "look at the README") == {"outcome": "startedNewTurn"}
        await agent.wait_for(lambda: agent.agent_text(sid).endswith("Started by a steer."))
        await agent.wait_for_update(sid, "session_info_update")  # the turn ran to its end: it was named
    (request,) = fake_anthropic.stream_requests
    assert texts_of(request["messages"][0]["content"]) == ["look at the README"]


async def test_steer_and_queue_from_the_chat_box(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = HeldPermissions()
    fake_anthropic.script(tool_reply("write_file", {"path": "a.txt", "content": "one\n"}),
                          text_reply("Using tabs."), text_reply("Tests pass."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        async with anyio.create_task_group() as group:
            prompts = Prompts(agent, group)
            await prompts.start("running", sid, "write a.txt")
            with anyio.fail_after(WAIT):
                await client.permission_asked.wait()
            # Answered at once, while the turn still waits for permission.
            assert await agent.prompt(sid, "/steer use tabs") == "end_turn"
            assert "Sent into the running turn" in agent.agent_text(sid)
            await prompts.start("queued", sid, "/queue then run the tests")
            assert "queued" not in prompts.results and "running" not in prompts.results
            client.go.set()
        assert prompts.finished == ["running", "queued"]
        assert prompts.results == {"running": "end_turn", "queued": "end_turn"}

    _, steered, queued = fake_anthropic.stream_requests
    assert texts_of(steered["messages"][-1]["content"])[-2:] == [STEER_NOTE, "use tabs"]
    assert texts_of(queued["messages"][-1]["content"]) == ["then run the tests"]


async def test_a_steer_the_turn_never_read_goes_with_the_next_prompt(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = HeldPermissions()
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid, stop = await steered_write(agent, client, fake_anthropic, "also add a header", cancel=True)
        assert stop == "cancelled"
        await agent.wait_for(lambda: "arrived as the turn stopped" in agent.agent_text(sid))
        assert await agent.prompt(sid, "go on") == "end_turn"
    assert len(fake_anthropic.stream_requests) == 2
    said = texts_of(fake_anthropic.stream_requests[-1]["messages"][-1]["content"])
    carried = next(n for n, text in enumerate(said) if "also add a header" in text and "previous turn" in text)
    assert said.index("go on") < carried  # the note follows the prompt it travels with


async def test_twenty_prompts_sent_at_once_are_all_answered_in_order(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    count = 20
    write_config(tmp_path / "hermes-home", "learning_loop: false\n")  # no background review between the turns
    fake_anthropic.script(slow_text_reply(20, 0.05, text="answer 0"),
                          *(text_reply(f"answer {n}") for n in range(1, count)))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        async with anyio.create_task_group() as group:
            prompts = Prompts(agent, group)
            for n in range(count):
                await prompts.start(f"p{n}", sid, f"prompt {n}")
        assert prompts.finished == [f"p{n}" for n in range(count)]
        assert set(prompts.results.values()) == {"end_turn"}
        assert agent.agent_text(sid) == "".join(f"answer {n}" for n in range(count))
    requests = fake_anthropic.stream_requests
    assert len(requests) == count
    for n, request in enumerate(requests):
        assert texts_of(request["messages"][-1]["content"]) == [f"prompt {n}"]
        assert len(request["messages"]) == 2 * n + 1  # every earlier exchange is in the history, once
