"""Notices, quotas and the JetBrains AIR profile through the real stdio server, each only for a client
that asked for it (docs/editor-extensions.md).

A client advertising ``session.notices`` gets compaction, budget warnings and job ends as ``notice``
updates (checked against the unstable schema); ``session.quotas`` gets ``quota_update`` from the
fake API's rate-limit headers and the budgets, ``quota/read`` and the ``quotaExceeded`` error when a
budget or a 429 ends a turn; AIR gets the report of the files a turn changed before the prompt's
answer, and background jobs as async tasks it can stop. Shapes no schema defines are checked against
``tests.support.extension_schema``. A client that advertised none of them sees none of them: the
stable schema's validator runs on its wire and no extension update reaches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from acp import PROTOCOL_VERSION, RequestError

from acp_hermes.testing.scripted_model import HttpError, MessageReply, TextBlock, ToolUseBlock
from tests.integration.test_budgets import FREE, costing, reading
from tests.integration.test_compaction import chat
from tests.integration.test_job_notices import WAIT_LIMIT, make_fifo, release
from tests.support.acp_harness import AgentProcess, EditorClient, PromptTask, choose, running_agent, write_config
from tests.support.fake_anthropic import (
    DelegationRouter,
    FakeAnthropic,
    error_reply,
    rate_limit_headers,
    slow_text_reply,
    text_reply,
    tool_reply,
)
from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH, UNSTABLE_SCHEMA_PATH

# The reference unstable schema, else (a clone without ../shared) the vendored release: both have notices.
NOTICES_SCHEMA = UNSTABLE_SCHEMA_PATH if UNSTABLE_SCHEMA_PATH.exists() else RELEASE_UNSTABLE_SCHEMA_PATH

pytestmark = pytest.mark.anyio

NOTICES = {"session": {"notices": {}}}
QUOTAS = {"session": {"quotas": {}}}
AIR = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["agentFileChangeReport", "asyncTasks"]}}}}
QUOTA_EXCEEDED = -32029
JOB = "cat release.fifo > /dev/null; echo job says bye"


async def initialize(agent: AgentProcess, capabilities: dict[str, Any]) -> dict[str, Any]:
    """``initialize`` as raw JSON-RPC (the SDK's model drops what it does not know), fs and terminal off."""
    result: dict[str, Any] = await agent.conn._conn.send_request("initialize", {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
                               **capabilities},
        "clientInfo": {"name": "acp-hermes-tests", "version": "1"}})
    return result


async def bypass_session(agent: AgentProcess) -> str:
    sid = await agent.new_session()
    await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
    return sid


def kinds(agent: AgentProcess, sid: str) -> list[str]:
    return [update["sessionUpdate"] for update in agent.updates(sid)]


def notices(agent: AgentProcess, sid: str, kind: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid, "notice") if u["_meta"]["acp-hermes"]["kind"] == kind]


# -- notices


@pytest.mark.parametrize("shows_notices", [True, False], ids=["notice-client", "stable-client"])
async def test_budget_warnings_and_job_ends_are_notices_only_for_a_client_that_shows_them(
        tmp_path: Path, fake_anthropic: FakeAnthropic, shows_notices: bool) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nsandbox: off\nallow_unsandboxed_bypass: true\n"
                 "budget:\n  session_usd: 1.0\n")
    fake_anthropic.script(reading(costing(0.85), "Looking."), text_reply("Read it.", usage=FREE),
                          tool_reply("terminal", {"command": JOB, "background": True}, id="toolu_job"),
                          text_reply("Started.", usage=FREE))
    fake_anthropic.script_auxiliary(text_reply("Notes", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, initialize=False,
                             schema_path=NOTICES_SCHEMA if shows_notices else None) as agent:
        await initialize(agent, NOTICES if shows_notices else {})
        (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
        fifo = make_fifo(agent.workspace, "release.fifo")
        sid = await bypass_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert await agent.prompt(sid, "run it in the background") == "end_turn"
        with anyio.fail_after(WAIT_LIMIT):
            await anyio.to_thread.run_sync(release, fifo, abandon_on_cancel=True)
        text = agent.agent_text
        if shows_notices:
            await agent.wait_for(lambda: bool(notices(agent, sid, "job")), WAIT_LIMIT)
            [budget] = notices(agent, sid, "budget")
            assert budget["severity"] == "warning"
            assert budget["title"] == "This session's budget is 85% spent ($0.85 of $1.00)."
            assert budget["description"] == "Raise it with /budget <usd> (/budget off removes it)."
            [job] = notices(agent, sid, "job")
            assert job["severity"] == "info" and "Background job job-1" in job["title"]
            assert "⚠️" not in text(sid) and "⏹" not in text(sid)  # not told twice
        else:
            await agent.wait_for(lambda: "⏹ Background job job-1" in text(sid), WAIT_LIMIT)
            assert "⚠️ This session's budget is 85% spent ($0.85 of $1.00)." in text(sid)
            assert "notice" not in kinds(agent, sid)
            assert agent.wire.extension_updates == 0


async def test_compaction_starts_and_ends_as_notices_beside_its_card(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script_auxiliary(text_reply("Parser work"), text_reply("## Goal\nShip the parser."))
    async with running_agent(tmp_path, fake_anthropic, initialize=False, schema_path=NOTICES_SCHEMA) as agent:
        await initialize(agent, NOTICES)
        sid = await agent.new_session()
        await chat(agent, fake_anthropic, sid, 8)
        fake_anthropic.script(text_reply("Nothing new to remember."))  # the memory flush
        assert await agent.prompt(sid, "/compact") == "end_turn"
        started, ended = notices(agent, sid, "compaction")
        assert started["title"] == "Compacting the conversation" and started["description"].startswith("about ")
        assert ended["title"] == "Compacted the conversation" and "→" in ended["description"]
        assert any(u["title"] == "Compacting conversation" for u in agent.updates(sid, "tool_call"))  # the card stays


# -- quotas


def quota_pools(agent: AgentProcess, sid: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The last quota_update's meters, by pool and meter id."""
    last = agent.updates(sid, "quota_update")[-1]
    return {pool["id"]: {meter["id"]: meter for meter in pool["meters"]} for pool in last["pools"]}


async def test_a_quota_client_sees_rate_limits_and_budgets_and_a_budget_stop_is_quota_exceeded(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nbudget:\n  session_usd: 0.5\n")
    fake_anthropic.rate_limit_headers = rate_limit_headers(requests=(50, 40), tokens=(400_000, 100_000))
    fake_anthropic.script(reading(costing(0.6), "Looking."))
    fake_anthropic.script_auxiliary(text_reply("Notes", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        answer = await initialize(agent, QUOTAS)
        assert answer["agentCapabilities"]["_meta"]["quotas"]["methods"] == ["quota/read"]
        (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
        sid = await agent.new_session()
        with pytest.raises(RequestError) as stopped:
            await agent.prompt(sid, "read the notes")
        assert stopped.value.code == QUOTA_EXCEEDED
        assert str(stopped.value).startswith("⛔ Budget reached: this session has spent $0.60")
        exceeded = stopped.value.data["quotaExceeded"]
        assert exceeded["poolId"] == "budget" and exceeded["meter"]["id"] == "session_usd"
        assert exceeded["meter"]["status"] == "exceeded" and exceeded["meter"]["usedPercent"] == 100

        pools = quota_pools(agent, sid)
        requests, tokens = pools["anthropic"]["requests"], pools["anthropic"]["tokens"]
        assert (requests["used"], requests["limit"], requests["usedPercent"]) == (10, 50, 20)
        assert requests["window"] == "minute" and requests["resetsAt"] == "2026-11-29T08:00:00Z"
        assert (tokens["used"], tokens["limit"], tokens["status"]) == (300_000, 400_000, "ok")
        assert (pools["budget"]["session_usd"]["used"], pools["budget"]["session_usd"]["limit"]) == (0.6, 0.5)
        assert "usage_update" in kinds(agent, sid)  # kept beside the quotas

        read = await agent.conn._conn.send_request("quota/read", {"sessionId": sid})
        assert {pool["id"] for pool in read["pools"]} == {"anthropic", "budget"}

        with pytest.raises(RequestError) as refused:  # the next prompt is refused for the same limit
            await agent.prompt(sid, "go on")
        assert refused.value.code == QUOTA_EXCEEDED and refused.value.data["quotaExceeded"]["poolId"] == "budget"
    assert len(fake_anthropic.stream_requests) == 1


async def test_a_429_with_no_retry_left_ends_the_turn_with_quota_exceeded(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nmax_retries: 0\n")
    fake_anthropic.rate_limit_headers = rate_limit_headers(requests=(50, 0))
    fake_anthropic.script(error_reply(429, message="Number of requests has exceeded your rate limit",
                                      error_type="rate_limit_error"))
    fake_anthropic.script_auxiliary(text_reply("Limits", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        await initialize(agent, QUOTAS)
        sid = await agent.new_session()
        with pytest.raises(RequestError) as stopped:
            await agent.prompt(sid, "hello")
        assert stopped.value.code == QUOTA_EXCEEDED and "429" in str(stopped.value)
        exceeded = stopped.value.data["quotaExceeded"]
        assert exceeded["poolId"] == "anthropic" and exceeded["meter"]["id"] == "requests"
        assert exceeded["resetsAt"] == "2026-11-29T08:00:00Z"
        assert quota_pools(agent, sid)["anthropic"]["requests"]["status"] == "exceeded"


async def test_a_stable_client_keeps_usage_and_text_and_sees_no_quota(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nbudget:\n  session_usd: 0.5\n")
    fake_anthropic.rate_limit_headers = rate_limit_headers()
    fake_anthropic.script(reading(costing(0.6), "Looking."))
    fake_anthropic.script_auxiliary(text_reply("Notes", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert "⛔ Budget reached" in agent.agent_text(sid) and "usage_update" in kinds(agent, sid)
        assert agent.wire.extension_updates == 0 and "quota_update" not in kinds(agent, sid)


# -- JetBrains AIR


def file_reports(agent: AgentProcess, sid: str) -> list[dict[str, Any]]:
    return [u["_meta"]["jetbrains"]["air"]["agentFileChangeReport"] for u in agent.updates(sid, "session_info_update")
            if "agentFileChangeReport" in ((u.get("_meta") or {}).get("jetbrains") or {}).get("air", {})]


def writes(*files: tuple[str, str]) -> MessageReply:
    calls = [ToolUseBlock(f"toolu_w{n}", "write_file", {"path": path, "content": content})
             for n, (path, content) in enumerate(files)]
    return MessageReply([TextBlock("Writing."), *calls], stop_reason="tool_use")


async def air_prompt(agent: AgentProcess, sid: str, text: str, request_id: str | None) -> str:
    """A prompt as AIR sends it, raw (the SDK's client drops a prompt's ``_meta``)."""
    meta = {"jetbrains": {"air": {"agentFileChangeReportRequest": {"version": 1, "requestId": request_id}}}}
    response = await agent.conn._conn.send_request("session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": text}], **({"_meta": meta} if request_id else {})})
    return str(response["stopReason"])


async def test_air_gets_the_files_the_turn_changed_before_the_prompts_answer(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(writes(("a.txt", "new\n"), ("src/b.txt", "changed\n")), text_reply("Done."),
                          text_reply("Nothing to change."), text_reply("Still nothing."))
    fake_anthropic.script_auxiliary(text_reply("Files", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, initialize=False,
                             client=EditorClient(policy=choose("allow_once"))) as agent:
        answer = await initialize(agent, AIR)
        assert "agentFileChangeReport" in answer["_meta"]["jetbrains"]["air"]["capabilities"]
        (agent.workspace / "src").mkdir()
        (agent.workspace / "src" / "b.txt").write_text("old\n", encoding="utf-8")
        (agent.workspace / "untouched.txt").write_text("stays\n", encoding="utf-8")
        sid = await agent.new_session()
        assert await air_prompt(agent, sid, "write them", "turn-1") == "end_turn"
        [report] = file_reports(agent, sid)
        assert report == {"version": 1, "requestId": "turn-1", "status": "reported", "declaredComplete": True,
                          "truncated": False,
                          "paths": [str(agent.workspace / "a.txt"), str(agent.workspace / "src" / "b.txt")]}
        messages = agent.wire.messages
        shown = next(i for i, m in enumerate(messages) if m.get("method") == "session/update"
                     and "agentFileChangeReport" in str(m["params"]["update"].get("_meta")))
        answered = next(i for i, m in enumerate(messages) if "result" in m and m["result"].get("stopReason"))
        assert shown < answered  # before the prompt's answer

        assert await air_prompt(agent, sid, "anything else?", "turn-2") == "end_turn"
        assert file_reports(agent, sid)[-1]["paths"] == []  # a turn that changed nothing
        assert await air_prompt(agent, sid, "and now?", None) == "end_turn"
        assert len(file_reports(agent, sid)) == 2  # not asked: not sent


async def test_a_client_that_is_not_air_gets_no_file_change_report(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(writes(("a.txt", "new\n")), text_reply("Done."))
    fake_anthropic.script_auxiliary(text_reply("Files", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient(policy=choose("allow_once"))) as agent:
        sid = await agent.new_session()
        assert await air_prompt(agent, sid, "write it", "turn-1") == "end_turn"
        assert (agent.workspace / "a.txt").read_text(encoding="utf-8") == "new\n"
        assert file_reports(agent, sid) == [] and agent.wire.extension_updates == 0


@pytest.mark.parametrize("air", [True, False], ids=["air", "stable-client"])
async def test_a_background_job_is_an_async_task_air_can_stop(
        tmp_path: Path, fake_anthropic: FakeAnthropic, air: bool) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nsandbox: off\nallow_unsandboxed_bypass: true\n")
    fake_anthropic.script(tool_reply("terminal", {"command": JOB, "background": True}, id="toolu_job"),
                          text_reply("Started."))
    fake_anthropic.script_auxiliary(text_reply("Job", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        await initialize(agent, AIR if air else {})
        make_fifo(agent.workspace, "release.fifo")  # never opened: the job runs until it is stopped
        sid = await bypass_session(agent)
        assert await agent.prompt(sid, "run it in the background") == "end_turn"
        if not air:
            assert agent.wire.extension_updates == 0 and not any(k.startswith("async_task") for k in kinds(agent, sid))
            return
        [spawned] = agent.updates(sid, "async_task_spawned")
        assert spawned == {"sessionUpdate": "async_task_spawned", "asyncTaskId": "job-1", "name": JOB,
                           "taskType": "shell", "description": JOB, "showInTranscript": False, "canStop": True,
                           "toolCallId": "toolu_job"}
        answer = await agent.conn._conn.send_request("_session/async_task/stop",
                                                     {"sessionId": sid, "asyncTaskId": "job-1"})
        assert answer == {"stopped": True}
        ended = await agent.wait_for_update(sid, "async_task_state_update", timeout=WAIT_LIMIT)
        assert ended["asyncTaskId"] == "job-1" and ended["state"] == "stopped"
        again = await agent.conn._conn.send_request("_session/async_task/stop",
                                                    {"sessionId": sid, "asyncTaskId": "job-1"})
        assert again == {"stopped": False}


async def test_children_are_async_tasks_for_air_without_native_subagent_sessions(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    goals = ["Lint the parser module", "Lint the lexer module"]
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in goals]}, id="toolu_gate"),
        text_reply("One module is clean; the other lint failed."),
    ).child(goals[0], tool_reply("read_file", {"path": "notes.txt"}), text_reply("parser: clean")) \
        .child(goals[1], HttpError(400, "lexer request rejected"))
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        await initialize(agent, AIR)
        (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
        parent = await agent.new_session()
        assert await agent.prompt(parent, "lint two modules") == "end_turn"
        spawned = {u["asyncTaskId"]: u for u in agent.updates(parent, "async_task_spawned")}
        assert [u["taskType"] for u in spawned.values()] == ["agent", "agent"]
        assert {u["toolCallId"] for u in spawned.values()} == {"toolu_gate"}
        states = {u["asyncTaskId"]: u["state"] for u in agent.updates(parent, "async_task_state_update")}
        assert states.keys() == spawned.keys() and sorted(states.values()) == ["completed", "failed"]
        progress = agent.updates(parent, "async_task_progress")
        assert [u["lastToolName"] for u in progress] == ["read_file"]
        assert agent.updates(parent, "subagent_update") == []  # AIR did not ask for child sessions


async def test_air_stops_one_child_and_the_others_and_the_turn_go_on(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    goals = ["Lint the parser module", "Lint the lexer module"]
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in goals]}, id="toolu_gate"),
        text_reply("The parser is clean; the lexer lint was stopped."),
    ).child(goals[0], slow_text_reply(400, 0.05)).child(goals[1], text_reply("lexer: clean"))
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        await initialize(agent, AIR)
        parent = await agent.new_session()
        task = PromptTask(agent, parent)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "lint two modules")
            await agent.wait_for(lambda: len(agent.updates(parent, "async_task_state_update")) == 1, WAIT_LIMIT)
            [finished] = agent.updates(parent, "async_task_state_update")  # the lexer's child, done at once
            slow = next(u["asyncTaskId"] for u in agent.updates(parent, "async_task_spawned")
                        if u["asyncTaskId"] != finished["asyncTaskId"])
            answer = await agent.conn._conn.send_request("_session/async_task/stop",
                                                         {"sessionId": parent, "asyncTaskId": slow})
            assert answer == {"stopped": True}
            with anyio.fail_after(WAIT_LIMIT):
                await task.done.wait()
        assert task.stop_reason == "end_turn"  # the parent's turn went on
        states = {u["asyncTaskId"]: u["state"] for u in agent.updates(parent, "async_task_state_update")}
        assert states == {finished["asyncTaskId"]: "completed", slow: "stopped"}
        assert agent.agent_text(parent).endswith("the lexer lint was stopped.")
