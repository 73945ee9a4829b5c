"""``delegate_task`` through the real stdio server: children, their rendering, their safety, their ends.

Every child is a real session of the server talking to the scripted model. Children of a batch run
at once and their requests interleave, so the fake answers by *who asks* (``DelegationRouter``): a child's
system prompt starts with the subagent identity and its first user message is its goal; the parent
gets its own replies in order. Each test then checks what the editor saw (both renderings: the
delegate call's card for any client, ``subagent_update`` and the child's own updates for a client
that advertised the unstable ``subagents`` capability or AIR's ``nativeSubagentSessions``) and what
each model request carried. A client shown children is checked against the unstable schema of
release schema-v1.24.1, which published ``subagent_update`` (vendored); any other against the stable one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError

from acp_hermes.core.system_prompt import SUBAGENT_IDENTITY
from acp_hermes.core.turn_input import PLAN_MODE_NOTE
from acp_hermes.testing.scripted_model import (
    HttpError,
    MessageReply,
    ModelRequest,
    Reply,
    TextBlock,
    ToolUseBlock,
    Usage,
)
from acp_hermes_memory.session_db import SessionDB
from acp_hermes_tools.session_search import SUMMARY_SYSTEM
from tests.integration.test_cli import run_cli
from tests.support.acp_harness import (
    TRUST_ALL,
    AgentProcess,
    EditorClient,
    PromptTask,
    cancel_and_wait,
    raw_agent,
    running_agent,
    write_config,
)
from tests.support.fake_anthropic import (
    DelegationRouter,
    FakeAnthropic,
    first_user_text,
    slow_text_reply,
    system_text,
    text_reply,
    texts_of,
    tool_reply,
)
from tests.support.fake_anthropic import is_subagent_request as is_child
from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

NEVER_DELEGATED = {"clarify", "memory", "skill_manage"}
# What a client shown children (subagent_update) is validated against: the release that published it.
SUBAGENTS_SCHEMA = RELEASE_UNSTABLE_SCHEMA_PATH
# Without the client's subagents capability (the delegate card) and with it (child sessions).
both_renderings = pytest.mark.parametrize("subagents", [False, True], ids=["card", "subagent-sessions"])


# -- reading model requests


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["name"] for tool in body.get("tools") or []}


def requests_of(fake: FakeAnthropic, goal: str) -> list[dict[str, Any]]:
    """The conversation requests of the child whose task is ``goal``."""
    return [body for body in fake.stream_requests if is_child(body) and first_user_text(body).startswith(goal)]


def request_index(fake: FakeAnthropic, goal: str) -> int:
    """The fake's index of the first request of the child whose task is ``goal``."""
    return next(request.index for request in fake.server.requests
                if is_child(request.body) and first_user_text(request.body).startswith(goal))


def parent_requests(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [body for body in fake.stream_requests if not is_child(body)]


# -- the client side


async def initialize_with_subagents(agent: AgentProcess, capabilities: dict[str, Any] | None = None) -> None:
    """``initialize`` as raw JSON-RPC (the SDK's ClientCapabilities model drops ``subagents``), with
    ``capabilities`` beside fs and terminal: by default the unstable ``subagents``."""
    await agent.conn._conn.send_request("initialize", {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
                               **({"subagents": {}} if capabilities is None else capabilities)},
        "clientInfo": {"name": "acp-hermes-tests", "version": "1"},
    })


def card_texts(agent: AgentProcess, session_id: str, call_id: str) -> list[str]:
    """Every text the delegate call's card showed, in order (its progress, then its result)."""
    texts = []
    for update in agent.tool_updates(session_id, call_id):
        for item in update.get("content") or []:
            if item.get("type") == "content":
                texts.append(item["content"]["text"])
    return texts


def card_titles(agent: AgentProcess, session_id: str, call_id: str) -> list[str]:
    """Every title the delegate call's card showed, in order, each once (its tool_call, then its updates)."""
    titles: list[str] = []
    for update in agent.tool_updates(session_id, call_id):
        if "title" in update and (not titles or titles[-1] != update["title"]):
            titles.append(update["title"])
    return titles


def child_ids(agent: AgentProcess, parent_id: str) -> list[str]:
    """The children announced on the parent (subagent_update), in order of announcement."""
    seen: list[str] = []
    for update in agent.updates(parent_id, "subagent_update"):
        if update["sessionId"] not in seen:
            seen.append(update["sessionId"])
    return seen


def check_subagent_wire(agent: AgentProcess, root_id: str) -> dict[str, list[dict[str, Any]]]:
    """The rules of the subagents rendering, for every child below ``root_id`` (a grandchild is announced
    on its own parent, the child): announced (running, with a title) before any message names it, exactly
    one terminal state, nothing after it. Returns each child's own updates."""
    owner: dict[str, str] = {}  # child -> the session it was announced on
    ended: set[str] = set()
    own: dict[str, list[dict[str, Any]]] = {}
    for message in agent.sent():
        params = message.get("params") or {}
        session_id = params.get("sessionId")
        if session_id is None or (session_id != root_id and session_id not in owner):
            assert session_id is None, f"{message.get('method')} names session {session_id} before its announcement"
            continue
        assert session_id not in ended, f"{message.get('method')} for child {session_id} after its end"
        if message.get("method") != "session/update":
            continue
        update = params["update"]
        if session_id != root_id:
            own[session_id].append(update)
        if update["sessionUpdate"] != "subagent_update":
            continue
        child = update["sessionId"]
        state = (update.get("state") or {}).get("state")
        if child not in owner:
            assert state == "running" and update.get("title"), f"first subagent_update of {child}: {update}"
            assert update.get("capabilities") == {"cancel": {}}
            owner[child] = session_id
            own[child] = []
        else:
            assert owner[child] == session_id, f"{child} updated on {session_id}, announced on {owner[child]}"
            if state == "idle":
                assert child not in ended, f"a second terminal state for {child}: {update}"
                ended.add(child)
    assert set(owner) == ended, f"children never ended: {set(owner) - ended}"
    return own


def terminal_states(agent: AgentProcess, parent_id: str) -> dict[str, dict[str, Any]]:
    return {u["sessionId"]: u["state"] for u in agent.updates(parent_id, "subagent_update")
            if (u.get("state") or {}).get("state") == "idle"}


def results_in(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"] \
        if isinstance(last["content"], list) else []


def joined(items: Iterable[str]) -> str:
    return "\n".join(items)


# -- 1. one child


CHILD_GOAL = "Count the TODO markers in src/"
CHILD_ANSWER = "There are 7 TODO markers, all in src/app.py."
PARENT_PROMPT = "Please have a helper count the TODOs. SECRET-PARENT-CONTEXT-4711"


@both_renderings
async def test_a_single_child_works_in_a_fresh_context_and_its_answer_is_the_tool_result(
    tmp_path: Path, fake_anthropic: FakeAnthropic, subagents: bool
) -> None:
    (tmp_path / "workspace" / "src").mkdir(parents=True)
    (tmp_path / "workspace" / "src" / "app.py").write_text("# TODO one\n")
    (tmp_path / "workspace" / "AGENTS.md").write_text("PROJECT-RULE: tabs, never spaces.\n")
    home = tmp_path / "hermes-home"
    (home / "memories").mkdir(parents=True)
    (home / "SOUL.md").write_text("You are Quill, a SOUL-PERSONA pair programmer.\n")
    (home / "memories" / "MEMORY.md").write_text("MEMORY-FACT: the user deploys on Fridays.\n")
    (home / "memories" / "USER.md").write_text("USER-FACT: the user is called Ada.\n")
    write_config(home, "system_message: CONFIG-MESSAGE answer in British English.\n" + TRUST_ALL)
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": CHILD_GOAL, "context": "Only src/ matters."}, id="toolu_delegate"),
        text_reply("The helper found 7."),
    ).child(
        CHILD_GOAL,
        tool_reply("search_files", {"pattern": "TODO", "path": "src"}, id="toolu_child_search"),
        text_reply(CHILD_ANSWER),
    )
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, home=home, initialize=not subagents,
                             schema_path=SUBAGENTS_SCHEMA if subagents else None) as agent:
        if subagents:
            await initialize_with_subagents(agent)
        parent = await agent.new_session()
        assert await agent.prompt(parent, PARENT_PROMPT) == "end_turn"

        # The parent model got the child's final answer as the delegate call's result.
        text, is_error = tool_result(fake_anthropic, "toolu_delegate")
        assert not is_error and text == f"Subagent completed\n\n{CHILD_ANSWER}"
        assert [b["tool_use_id"] for b in results_in(parent_requests(fake_anthropic)[1])] == ["toolu_delegate"]

        # The child: its own identity, its task and nothing of the parent's conversation or tools it must not have.
        first, second = requests_of(fake_anthropic, CHILD_GOAL)
        parent_system, child_system = system_text(parent_requests(fake_anthropic)[0]), system_text(first)
        assert child_system.startswith(SUBAGENT_IDENTITY) and parent_system.startswith("You are Quill")
        personal = ("SOUL-PERSONA", "MEMORY-FACT", "USER-FACT", "CONFIG-MESSAGE")
        assert all(marker in parent_system for marker in personal)
        assert not any(marker in child_system for marker in personal)  # the user's, not the task's
        assert "PROJECT-RULE: tabs, never spaces." in child_system  # the project's rules hold for it too
        assert first_user_text(first) == f"{CHILD_GOAL}\n\nContext from the parent agent:\nOnly src/ matters."
        assert len(first["messages"]) == 1
        assert "SECRET-PARENT-CONTEXT-4711" not in str(first) and "SECRET-PARENT-CONTEXT-4711" not in str(second)
        assert not tool_names(first) & NEVER_DELEGATED and "search_files" in tool_names(first)
        assert tool_names(parent_requests(fake_anthropic)[0]) >= NEVER_DELEGATED  # the parent has them
        assert [b["tool_use_id"] for b in results_in(second)] == ["toolu_child_search"]

        calls = check_tool_calls(agent, parent)
        assert set(calls) == {"toolu_delegate"}  # the child's calls are not the parent's
        delegate = calls["toolu_delegate"]
        assert delegate.status == "completed" and delegate.text() == f"Subagent completed\n\n{CHILD_ANSWER}"
        # Work, not a thought; its title follows the child: the summary the editors that show only a title show.
        assert delegate.announced["kind"] == "other"
        assert card_titles(agent, parent, "toolu_delegate") == [
            f"Delegate: {CHILD_GOAL}", "Subagent starting", "Subagent running",
            'Subagent running · Search "TODO" in src', "Subagent completed"]
        assert delegate.final["rawOutput"]["children"][0]["status"] == "completed"
        progress = card_texts(agent, parent, "toolu_delegate")[:-1]
        assert progress[0] == f"0/1 running\n1. {CHILD_GOAL} — queued"
        assert f"1/1 running\n1. {CHILD_GOAL} — `search_files`" in joined(progress)
        assert progress[-1] == f"0/1 running, 1 done\n1. {CHILD_GOAL} — completed"

        if not subagents:
            assert agent.updates(parent, "subagent_update") == []
            assert {m["params"]["sessionId"] for m in agent.sent("session/update")} == {parent}
            return
        (child,) = child_ids(agent, parent)
        own = check_subagent_wire(agent, parent)[child]
        assert child == delegate.final["rawOutput"]["children"][0]["session_id"]
        started = agent.updates(parent, "subagent_update")[0]
        assert started["title"] == CHILD_GOAL and started["description"] == "Only src/ matters."
        kinds = [u["sessionUpdate"] for u in own]
        assert "tool_call" in kinds and "agent_message_chunk" in kinds and "usage_update" in kinds
        assert "".join(u["content"]["text"] for u in own if u["sessionUpdate"] == "agent_message_chunk") \
            == CHILD_ANSWER
        assert check_tool_calls(agent, child).keys() == {"toolu_child_search"}
        state = terminal_states(agent, parent)[child]
        assert state["stopReason"] == "end_turn" and "error" not in state
        assert state["usage"]["inputTokens"] > 0 and state["usage"]["outputTokens"] > 0
        assert state["usage"]["totalTokens"] >= state["usage"]["inputTokens"] + state["usage"]["outputTokens"]


# -- 2. a batch of three, one of which fails


BATCH = ("Lint the parser module", "Lint the lexer module", "Lint the printer module")


class Meeting:
    """Holds each reply until ``count`` requests have arrived: proves they were in flight at the same time."""

    def __init__(self, count: int) -> None:
        self._barrier = threading.Barrier(count, timeout=10)

    def then(self, reply: Reply) -> Callable[[ModelRequest], Reply]:
        def answer(request: ModelRequest) -> Reply:
            self._barrier.wait()  # a BrokenBarrierError (a 500 from the fake) if they never meet
            return reply

        return answer


@both_renderings
async def test_a_batch_runs_at_once_and_a_failing_child_does_not_take_the_others_down(
    tmp_path: Path, fake_anthropic: FakeAnthropic, subagents: bool
) -> None:
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in BATCH]}, id="toolu_batch"),
        text_reply("Two of three are clean; the lexer lint failed."),
    )
    meeting = Meeting(3)  # each child's first request waits for the other two: they run at once
    router.child(BATCH[0], meeting.then(text_reply("parser: clean")))
    router.child(BATCH[1], meeting.then(HttpError(400, "lexer request rejected: too odd")))  # 400: not retried
    router.child(BATCH[2], meeting.then(text_reply("printer: clean")))
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=not subagents,
                             schema_path=SUBAGENTS_SCHEMA if subagents else None) as agent:
        if subagents:
            await initialize_with_subagents(agent)
        parent = await agent.new_session()
        assert await agent.prompt(parent, "lint all three modules") == "end_turn"

        text, is_error = tool_result(fake_anthropic, "toolu_batch")
        assert not is_error  # two children completed
        sections = text.split("\n\n## ")
        assert len(sections) == 3
        assert sections[0] == f"## Task 1/3: {BATCH[0]}\ncompleted\n\nparser: clean"
        assert sections[1].startswith(f"Task 2/3: {BATCH[1]}\nfailed: ")
        assert "lexer request rejected: too odd" in sections[1]
        assert sections[2] == f"Task 3/3: {BATCH[2]}\ncompleted\n\nprinter: clean"
        assert len(parent_requests(fake_anthropic)) == 2  # the parent's turn went on after the batch

        (call,) = check_tool_calls(agent, parent).values()
        children = call.final["rawOutput"]["children"]
        assert [c["goal"] for c in children] == list(BATCH)
        assert [c["status"] for c in children] == ["completed", "failed", "completed"]
        assert len({c["session_id"] for c in children}) == 3
        assert call.announced["kind"] == "other"
        titles = card_titles(agent, parent, "toolu_batch")
        assert titles[:2] == ["Delegate 3 tasks to subagents", "Subagents 0/3 running"]
        assert "Subagents 3/3 running" in titles  # the three at once, in the title too
        assert any(title.startswith("Subagents 2/3 running, 1 done") for title in titles)
        assert titles[-1] == "Subagents 3/3 done, 1 failed"  # the final title says how they ended
        progress = card_texts(agent, parent, "toolu_batch")[:-1]
        assert progress[0].startswith("0/3 running\n1. ")
        assert any(text.startswith("3/3 running\n") for text in progress)  # all three at once
        assert progress[-1] == (f"0/3 running, 3 done\n1. {BATCH[0]} — completed\n2. {BATCH[1]} — failed\n"
                                f"3. {BATCH[2]} — completed")

        if not subagents:
            assert agent.updates(parent, "subagent_update") == []
            return
        check_subagent_wire(agent, parent)
        assert child_ids(agent, parent) and set(child_ids(agent, parent)) == {c["session_id"] for c in children}
        states = terminal_states(agent, parent)
        failed = states[children[1]["session_id"]]  # 1.24 has no `error` reason: none, the failure in _meta
        assert "stopReason" not in failed and "error" not in failed
        assert "too odd" in failed["_meta"]["acp-hermes"]["error"]["message"]
        assert isinstance(failed["_meta"]["acp-hermes"]["error"]["code"], int)
        for ok in (children[0]["session_id"], children[2]["session_id"]):
            assert states[ok]["stopReason"] == "end_turn" and "error" not in states[ok]


# -- who sees children as sessions of their own, and who the card alone


AIR_NATIVE_SUBAGENTS = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["nativeSubagentSessions"]}}}}
AIR_WITHOUT_THEM = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "asyncTasks"]}}}}


@pytest.mark.parametrize(("capabilities", "as_sessions"), [
    ({"subagents": {}}, True),
    (AIR_NATIVE_SUBAGENTS, True),  # JetBrains AIR's name for it, as claude-agent-acp and codex-acp read it
    (AIR_WITHOUT_THEM, False),
    ({"subagents": None}, False),
], ids=["subagents", "air-native-subagent-sessions", "air-without-them", "subagents-null"])
async def test_children_are_sessions_only_for_a_client_that_asks_and_every_client_gets_the_card(
    tmp_path: Path, fake_anthropic: FakeAnthropic, capabilities: dict[str, Any], as_sessions: bool
) -> None:
    """Against release schema-v1.24.1's unstable schema when children are shown (a failed child's
    idle state included), the stable schema when they are not."""
    goals = BATCH[:2]
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in goals]}, id="toolu_gate"),
        text_reply("One module is clean; the other lint failed."),
    ).child(goals[0], text_reply("parser: clean")).child(goals[1], HttpError(400, "lexer request rejected"))
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=False,
                             schema_path=SUBAGENTS_SCHEMA if as_sessions else None) as agent:
        await initialize_with_subagents(agent, capabilities)
        parent = await agent.new_session()
        assert await agent.prompt(parent, "lint two modules") == "end_turn"

        (call,) = check_tool_calls(agent, parent).values()
        children = call.final["rawOutput"]["children"]
        assert [child["status"] for child in children] == ["completed", "failed"]
        assert card_titles(agent, parent, "toolu_gate")[-1] == "Subagents 2/2 done, 1 failed"  # the card, for all
        if not as_sessions:
            assert agent.updates(parent, "subagent_update") == []
            assert {message["params"]["sessionId"] for message in agent.sent("session/update")} == {parent}
            return
        own = check_subagent_wire(agent, parent)
        done, failed = (child["session_id"] for child in children)
        assert set(own) == {done, failed}
        assert "".join(u["content"]["text"] for u in own[done] if u["sessionUpdate"] == "agent_message_chunk") \
            == "parser: clean"
        states = terminal_states(agent, parent)
        assert states[done]["stopReason"] == "end_turn"
        assert "stopReason" not in states[failed]
        assert "lexer request rejected" in states[failed]["_meta"]["acp-hermes"]["error"]["message"]


# -- 3. a child's write asks the editor, on the parent's session


WRITE_GOAL = "Write the release notes to NOTES.md"


@both_renderings
async def test_a_childs_write_is_asked_on_the_parents_session_and_a_refusal_holds(
    tmp_path: Path, fake_anthropic: FakeAnthropic, subagents: bool
) -> None:
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": WRITE_GOAL}, id="toolu_delegate_write"),
        text_reply("The helper was not allowed to write."),
    ).child(
        WRITE_GOAL,
        tool_reply("write_file", {"path": "NOTES.md", "content": "# Release 2.0\n"}, id="toolu_child_write"),
        text_reply("I could not write NOTES.md: the user declined."),
    )
    fake_anthropic.script(*router.items())
    client = EditorClient(policy=lambda call, options: next(o["optionId"] for o in options
                                                            if o["kind"] == "reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, initialize=not subagents,
                             schema_path=SUBAGENTS_SCHEMA if subagents else None) as agent:
        if subagents:
            await initialize_with_subagents(agent)
        parent = await agent.new_session()
        assert await agent.prompt(parent, "write the release notes") == "end_turn"

        (asked,) = agent.sent("session/request_permission")
        params = asked["params"]
        assert params["sessionId"] == parent  # the user is asked where they are: on the parent
        call = params["toolCall"]
        assert call["toolCallId"] == "toolu_child_write"
        assert call["title"].startswith(f"Subagent 1 ({WRITE_GOAL}): ") and "NOTES.md" in call["title"]
        (diff,) = [item for item in call["content"] if item["type"] == "diff"]
        notes = agent.workspace / "NOTES.md"
        assert diff["path"] == str(notes) and diff["newText"] == "# Release 2.0\n" and "oldText" not in diff
        assert not notes.exists()

        # The child was told, and its parent got its answer.
        refusal, is_error = tool_result(fake_anthropic, "toolu_child_write")
        assert is_error and "declined" in refusal
        (_, after) = requests_of(fake_anthropic, WRITE_GOAL)
        assert [b["tool_use_id"] for b in results_in(after)] == ["toolu_child_write"]
        text, _ = tool_result(fake_anthropic, "toolu_delegate_write")
        assert text == "Subagent completed\n\nI could not write NOTES.md: the user declined."
        if subagents:
            (child,) = child_ids(agent, parent)
            check_subagent_wire(agent, parent)
            (child_call,) = check_tool_calls(agent, child).values()
            assert child_call.id == "toolu_child_write" and child_call.status == "failed"


# -- 4. a child of a session in plan mode


async def test_a_child_of_a_plan_mode_session_is_read_only_and_told_so(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": WRITE_GOAL}, id="toolu_delegate_plan"),
        text_reply("Plan: write the notes once we leave plan mode."),
    ).child(
        WRITE_GOAL,
        tool_reply("write_file", {"path": "NOTES.md", "content": "# Release 2.0\n"}, id="toolu_plan_write"),
        text_reply("Plan mode: I only drafted the notes."),
    )
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic) as agent:
        parent = await agent.new_session()
        await agent.conn.set_session_mode(session_id=parent, mode_id="plan")
        assert await agent.prompt(parent, "plan the release notes") == "end_turn"

        assert agent.sent("session/request_permission") == []  # refused without asking
        assert not (agent.workspace / "NOTES.md").exists()
        first, _ = requests_of(fake_anthropic, WRITE_GOAL)
        assert PLAN_MODE_NOTE in texts_of(first["messages"][0])
        refusal, is_error = tool_result(fake_anthropic, "toolu_plan_write")
        assert is_error and "plan mode" in refusal
        text, _ = tool_result(fake_anthropic, "toolu_delegate_plan")
        assert text == "Subagent completed\n\nPlan mode: I only drafted the notes."


# -- 5. the depth limit


OUTER_GOAL = "Survey the repository layout"
INNER_GOAL = "Describe the tests folder"


@both_renderings
async def test_a_child_may_delegate_once_more_and_a_grandchild_may_not(
    tmp_path: Path, fake_anthropic: FakeAnthropic, subagents: bool
) -> None:
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": OUTER_GOAL}, id="toolu_outer"),
        text_reply("Surveyed."),
    ).child(
        OUTER_GOAL,
        tool_reply("delegate_task", {"goal": INNER_GOAL, "toolsets": ["search"]}, id="toolu_inner"),
        text_reply("Layout: src/ and tests/ (tests described by my helper)."),
    ).child(INNER_GOAL, text_reply("tests/ holds unit and integration tests."))
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=not subagents,
                             schema_path=SUBAGENTS_SCHEMA if subagents else None) as agent:
        if subagents:
            await initialize_with_subagents(agent)
        parent = await agent.new_session()
        assert await agent.prompt(parent, "survey the repo") == "end_turn"

        assert "delegate_task" in tool_names(parent_requests(fake_anthropic)[0])
        child_first, _ = requests_of(fake_anthropic, OUTER_GOAL)
        assert "delegate_task" in tool_names(child_first)  # depth 1 < max_depth 2
        (grandchild,) = requests_of(fake_anthropic, INNER_GOAL)
        assert "delegate_task" not in tool_names(grandchild)  # depth 2: the limit
        assert tool_names(grandchild) == {"search_files"}  # only its toolset's tools
        assert system_text(grandchild).startswith(SUBAGENT_IDENTITY)
        inner, _ = tool_result(fake_anthropic, "toolu_inner")
        assert inner == "Subagent completed\n\ntests/ holds unit and integration tests."
        outer, _ = tool_result(fake_anthropic, "toolu_outer")
        assert outer == "Subagent completed\n\nLayout: src/ and tests/ (tests described by my helper)."
        assert f"— `delegate_task`: Delegate: {INNER_GOAL}" in joined(card_texts(agent, parent, "toolu_outer"))

        if subagents:
            own = check_subagent_wire(agent, parent)
            (child,) = child_ids(agent, parent)
            (grandchild_id,) = child_ids(agent, child)  # announced on the child, its parent
            assert set(own) == {child, grandchild_id}
            assert "".join(u["content"]["text"] for u in own[grandchild_id]
                           if u["sessionUpdate"] == "agent_message_chunk") == "tests/ holds unit and integration tests."


# -- 6. cancel


LONG = 400  # chunks of a child's slow reply: far longer than any test waits (cancel cuts it)


def slow_child_reply() -> Reply:
    return slow_text_reply(LONG, 0.05)


@both_renderings
async def test_cancelling_the_parent_mid_batch_stops_every_child_and_the_session_goes_on(
    tmp_path: Path, fake_anthropic: FakeAnthropic, subagents: bool
) -> None:
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in BATCH]}, id="toolu_cancelled_batch"),
        text_reply("Starting over."),
    )
    for goal in BATCH:
        router.child(goal, slow_child_reply())
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, initialize=not subagents,
                             schema_path=SUBAGENTS_SCHEMA if subagents else None) as agent:
        if subagents:
            await initialize_with_subagents(agent)
        parent = await agent.new_session()
        task = PromptTask(agent, parent)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "lint all three modules")
            await fake_anthropic.wait_for_request_async(4)  # the parent's, then one of each child's
            # Every child is streaming its answer.
            if subagents:
                await agent.wait_for(lambda: len({sid for sid in child_ids(agent, parent)
                                                  if agent.updates(sid, "agent_message_chunk")}) == 3)
            assert await cancel_and_wait(agent, task) == "cancelled"
        await fake_anthropic.wait_for_disconnect_async(count=3)  # each child's model stream was closed
        assert sorted(fake_anthropic.disconnects) == [1, 2, 3]

        # The next prompt works against a fake that refuses a tool_use without its tool_result.
        assert await agent.prompt(parent, "never mind, start over") == "end_turn"
        assert len(parent_requests(fake_anthropic)) == 2
        assert agent.agent_text(parent).endswith("Starting over.")
        text, is_error = tool_result(fake_anthropic, "toolu_cancelled_batch")
        assert is_error and "Cancelled" in text
        (call,) = check_tool_calls(agent, parent).values()
        assert call.status == "failed"
        *progress, final = card_texts(agent, parent, "toolu_cancelled_batch")
        assert final == text
        assert progress[-1] == "0/3 running, 3 done\n" + "\n".join(
            f"{number}. {goal} — cancelled" for number, goal in enumerate(BATCH, 1))
        assert card_titles(agent, parent, "toolu_cancelled_batch")[-1] == "Subagents 3/3 done, 3 cancelled"
        if subagents:
            check_subagent_wire(agent, parent)
            states = terminal_states(agent, parent)
            assert len(states) == 3 and {s["stopReason"] for s in states.values()} == {"cancelled"}


async def test_children_still_waiting_when_the_parent_is_cancelled_end_the_card_as_cancelled(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "delegation:\n  max_concurrent: 1\n")
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in BATCH]}, id="toolu_one_at_a_time"),
        text_reply("Starting over."),
    )
    for goal in BATCH:
        router.child(goal, slow_child_reply())
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        parent = await agent.new_session()
        task = PromptTask(agent, parent)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "lint all three modules")
            await fake_anthropic.wait_for_request_async(2)  # the parent's, then the first child's
            assert await cancel_and_wait(agent, task) == "cancelled"
        titles = card_titles(agent, parent, "toolu_one_at_a_time")
        assert "Subagents 1/3 running" in titles
        assert titles[-1] == "Subagents 3/3 done, 3 cancelled"  # the two that never started, too
        assert check_tool_calls(agent, parent)["toolu_one_at_a_time"].status == "failed"


def held(release: threading.Event, reply: Reply) -> Callable[[ModelRequest], Reply]:
    """``reply``, once the test sets ``release`` (bounded: a test that fails early must not hang the fake)."""

    def answer(request: ModelRequest) -> Reply:
        release.wait(timeout=15)
        return reply

    return answer


async def test_a_child_takes_no_prompt_and_its_own_cancel_stops_only_it(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    goals = BATCH[:2]
    release = threading.Event()
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in goals]}, id="toolu_pair"),
        text_reply("One of two finished."),
    ).child(goals[0], slow_child_reply()).child(goals[1], held(release, text_reply("lexer: clean")))
    fake_anthropic.script(*router.items())
    try:
        async with running_agent(tmp_path, fake_anthropic, initialize=False,
                                 schema_path=SUBAGENTS_SCHEMA) as agent:
            await initialize_with_subagents(agent)
            parent = await agent.new_session()
            task = PromptTask(agent, parent)
            async with anyio.create_task_group() as group:
                group.start_soon(task.run, "lint two modules")
                await fake_anthropic.wait_for_request_async(3)
                await agent.wait_for(lambda: len(child_ids(agent, parent)) == 2)
                first, second = (next(u["sessionId"] for u in agent.updates(parent, "subagent_update")
                                      if u.get("title") == goal) for goal in goals)
                await agent.wait_for(lambda: bool(agent.updates(first, "agent_message_chunk")))

                with pytest.raises(RequestError) as refused:
                    await agent.prompt(first, "do something else")
                assert refused.value.code == -32602 and "subagent" in str(refused.value.data)

                await agent.conn.cancel(session_id=first)  # the client cancels one child
                await agent.wait_for(lambda: first in terminal_states(agent, parent))
                assert terminal_states(agent, parent)[first]["stopReason"] == "cancelled"
                assert second not in terminal_states(agent, parent) and task.stop_reason is None
                release.set()
                with anyio.fail_after(10):
                    await task.done.wait()
            assert task.stop_reason == "end_turn"  # the parent's turn went on
            assert fake_anthropic.disconnects == [request_index(fake_anthropic, goals[0])]  # only its stream closed
            text, is_error = tool_result(fake_anthropic, "toolu_pair")
            assert not is_error
            cancelled, completed = text.split("\n\n## ")
            assert cancelled.startswith(f"## Task 1/2: {goals[0]}\ncancelled before it finished\n\nword0 ")
            assert completed == f"Task 2/2: {goals[1]}\ncompleted\n\nlexer: clean"
            states = terminal_states(agent, parent)
            assert states[second]["stopReason"] == "end_turn"
            check_subagent_wire(agent, parent)
    finally:
        release.set()


def refused_as_a_child(error: RequestError) -> bool:
    return error.code == -32602 and "is a subagent working on its parent's task" in str(error.data)


async def test_an_editor_cannot_drive_a_child_directly_and_nothing_changes(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """A child follows its parent: every request that would drive its session (its mode, its options,
    a rewind, a steer, a prompt, opening, forking, closing or deleting it) is refused with -32602 while
    it runs, and the child goes on and ends as if none had been sent; once it ended, opening, forking,
    closing or deleting its stored session is refused the same way."""
    release = threading.Event()
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": BATCH[0]}, id="toolu_one"), text_reply("The parser is clean."),
    ).child(BATCH[0], held(release, text_reply("parser: clean")))
    fake_anthropic.script(*router.items())
    fake_anthropic.script_auxiliary(text_reply("Linting"))  # the parent's title
    home = tmp_path / "hermes-home"
    workspace = str(tmp_path / "workspace")
    try:
        async with running_agent(tmp_path, fake_anthropic) as agent:
            parent = await agent.new_session()
            task = PromptTask(agent, parent)
            raw = agent.conn._conn

            async def attempts(child: str) -> list[tuple[str, Any]]:
                requests: list[tuple[str, Callable[[], Any]]] = [
                    ("session/set_mode", lambda: agent.conn.set_session_mode(session_id=child, mode_id="plan")),
                    ("session/set_config_option", lambda: agent.conn.set_config_option(
                        config_id="mode", session_id=child, value="plan")),
                    ("_session/rewind_points", lambda: agent.conn.ext_method("session/rewind_points",
                                                                             {"sessionId": child})),
                    ("_session/rewind", lambda: agent.conn.ext_method("session/rewind", {
                        "sessionId": child, "beforeMessage": {"messageId": "user-1"}, "mode": "both"})),
                    ("_session/steering", lambda: agent.conn.ext_method("session/steering", {
                        "sessionId": child, "prompt": [{"type": "text", "text": "stop"}]})),
                    ("session/prompt", lambda: agent.prompt(child, "do something else")),
                    ("session/load", lambda: agent.conn.load_session(cwd=workspace, session_id=child, mcp_servers=[])),
                    ("session/resume", lambda: agent.conn.resume_session(cwd=workspace, session_id=child,
                                                                         mcp_servers=[])),
                    ("session/fork", lambda: agent.conn.fork_session(cwd=workspace, session_id=child, mcp_servers=[])),
                    ("session/close", lambda: agent.conn.close_session(session_id=child)),
                    ("session/delete", lambda: raw.send_request("session/delete", {"sessionId": child})),
                ]
                outcomes: list[tuple[str, Any]] = []
                for method, send in requests:
                    try:
                        outcomes.append((method, await send()))
                    except RequestError as error:
                        outcomes.append((method, "refused" if refused_as_a_child(error) else error))
                return outcomes

            async with anyio.create_task_group() as group:
                group.start_soon(task.run, "lint the parser")
                await fake_anthropic.wait_for_request_async(2)  # the child's model call is in flight
                with SessionDB(home / "acp-hermes" / "state.db") as db:
                    (child,) = [record.id for record in db.subagents_of(parent)]
                while_running = await attempts(child)
                assert task.stop_reason is None  # the child is still working
                release.set()
                with anyio.fail_after(10):
                    await task.done.wait()
            assert while_running == [(method, "refused") for method, _ in while_running]
            assert task.stop_reason == "end_turn"
            assert tool_result(fake_anthropic, "toolu_one") == ("Subagent completed\n\nparser: clean", False)
            (child_request,) = [body for body in fake_anthropic.stream_requests if is_child(body)]
            assert texts_of(child_request["messages"]) == [BATCH[0]]  # no steer, no prompt reached it
            assert not agent.updates(child)  # nothing was announced on the child's id

            # Once it ended it is no live session here ("not found", as any session not loaded), and
            # what would open, copy, close or delete it from the store is refused as before.
            stored = ("session/load", "session/resume", "session/fork", "session/close", "session/delete")
            after_its_end = await attempts(child)
            assert [(method, outcome if outcome == "refused" else outcome.code) for method, outcome in after_its_end] \
                == [(method, "refused" if method in stored else -32002) for method, _ in after_its_end]
            assert await agent.prompt(parent, "thanks") == "end_turn"  # the parent goes on
    finally:
        release.set()
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        record = db.get_session(child)
        assert record is not None and record.mode == "default" and record.end_reason is None
        assert [row.role for row in db.messages(child)] == ["user", "assistant"]
        records, _ = db.list_sessions(include_empty=True)
        assert {r.id for r in records} == {parent}  # no fork was made (children are never listed)
        assert [c.id for c in db.subagents_of(parent)] == [child]


# -- 7. the process killed mid-delegation


async def test_a_process_killed_mid_delegation_leaves_a_parent_that_loads_and_goes_on(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    router = DelegationRouter().parent(tool_reply("delegate_task", {"goal": BATCH[0]}, id="toolu_killed"))
    router.child(BATCH[0], slow_child_reply())
    fake_anthropic.script(*router.items())
    async with raw_agent(tmp_path, fake_anthropic, home=home) as raw:
        await raw.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        parent = (await raw.request("session/new", {"cwd": str(tmp_path / "workspace"), "mcpServers": []}))[
            "result"]["sessionId"]
        await raw.send({"jsonrpc": "2.0", "id": "turn", "method": "session/prompt",
                        "params": {"sessionId": parent, "prompt": [{"type": "text", "text": "lint the parser"}]}})
        await fake_anthropic.wait_for_request_async(2)  # the child's answer is streaming
        await raw.wait_for(lambda: any(m.get("params", {}).get("update", {}).get("content")
                                       for m in raw.messages if isinstance(m, dict)
                                       and m.get("method") == "session/update"
                                       and m["params"]["update"].get("toolCallId") == "toolu_killed"))
        raw.process.kill()  # SIGKILL: nothing gets to clean up
        await raw.process.wait()
    assert raw.response("turn") is None
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        assert [r.role for r in db.messages(parent)] == ["user", "assistant"]  # the delegate call has no result
        (child,) = db.subagents_of(parent)
        assert child.title == BATCH[0] and child.parent_session_id == parent

    fake_anthropic.script(text_reply("Back after the crash."))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        await agent.conn.load_session(cwd=str(agent.workspace), session_id=parent, mcp_servers=[])
        (call,) = [u for u in agent.updates(parent) if u["sessionUpdate"] == "tool_call"]
        assert call["toolCallId"] == "toolu_killed" and call["status"] == "failed"
        assert "Interrupted" in call["content"][0]["content"]["text"]
        assert await agent.prompt(parent, "what happened?") == "end_turn"
        assert agent.agent_text(parent).endswith("Back after the crash.")
        text, is_error = tool_result(fake_anthropic, "toolu_killed")
        assert is_error and "Interrupted" in text
        assert {m["params"]["sessionId"] for m in agent.sent("session/update")} == {parent}


# -- 8 and 9. a finished delegation, seen again: search, listings, the parent's replay


FIND_GOALS = ("Explain the quokkaflux cache", "Explain the retry budget")
FIND_ANSWERS = ("The quokkaflux cache keeps 64 entries.", "Four retries, then a failure.")
INTERMEDIATE = "INTERMEDIATE-STEP-7f3a: reading the cache module"


async def finished_delegation(tmp_path: Path, fake: FakeAnthropic, home: Path) -> tuple[str, list[str]]:
    """A first server process runs a batch of two to its end; the parent's id and its children's."""
    (tmp_path / "workspace").mkdir(parents=True, exist_ok=True)
    (tmp_path / "workspace" / "cache.py").write_text("SIZE = 64\n")
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in FIND_GOALS]}, id="toolu_explain"),
        text_reply("Both explained."),
    ).child(
        FIND_GOALS[0],
        tool_reply("read_file", {"path": "cache.py"}, id="toolu_child_read", text=INTERMEDIATE),
        text_reply(FIND_ANSWERS[0]),
    ).child(FIND_GOALS[1], text_reply(FIND_ANSWERS[1]))
    fake.script(*router.items())
    fake.script_auxiliary(text_reply("Explaining two modules"))  # the parent's title
    async with running_agent(tmp_path, fake, home=home) as agent:
        parent = await agent.new_session()
        assert await agent.prompt(parent, "explain the cache and the retries") == "end_turn"
        await agent.wait_for_update(parent, "session_info_update")
        (call,) = check_tool_calls(agent, parent).values()
        children = [child["session_id"] for child in call.final["rawOutput"]["children"]]
    return parent, children


async def test_the_parents_replay_shows_the_delegate_card_with_the_answers_not_the_childrens_work(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    parent, children = await finished_delegation(tmp_path, fake_anthropic, home)
    fake_anthropic.script(text_reply("Still here."))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        await agent.conn.load_session(cwd=str(agent.workspace), session_id=parent, mcp_servers=[])
        replayed = agent.updates(parent)
        (call,) = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
        assert call["toolCallId"] == "toolu_explain" and call["status"] == "completed"
        # As the card ended: work, titled with how the children ended, the reports as its content.
        assert call["kind"] == "other" and call["title"] == "Subagents 2/2 done"
        (shown,) = [item["content"]["text"] for item in call["content"]]
        assert shown == (f"## Task 1/2: {FIND_GOALS[0]}\ncompleted\n\n{FIND_ANSWERS[0]}\n\n"
                         f"## Task 2/2: {FIND_GOALS[1]}\ncompleted\n\n{FIND_ANSWERS[1]}")
        assert [child["session_id"] for child in call["rawOutput"]["children"]] == children
        # Nothing of the children's own work: not their steps, not their calls, not their sessions.
        wire = str(agent.sent())
        assert INTERMEDIATE not in wire and "toolu_child_read" not in wire and "SIZE = 64" not in wire
        assert {m["params"]["sessionId"] for m in agent.sent("session/update")} == {parent}
        assert await agent.prompt(parent, "thanks") == "end_turn"


def recap_or_title(request: ModelRequest) -> Reply:
    """The auxiliary model: a recap for a session_search summary, a title for anything else."""
    if system_text(request.body) == SUMMARY_SYSTEM:
        return text_reply(f"RECAP of {first_user_text(request.body).splitlines()[1]}")
    return text_reply("Some title")


async def test_children_are_found_by_session_search_and_the_cli_but_not_listed_to_the_editor(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    parent, (first_child, second_child) = await finished_delegation(tmp_path, fake_anthropic, home)
    fake_anthropic.script(tool_reply("session_search", {"query": "quokkaflux"}, id="toolu_recall"),
                          text_reply("A subagent explained it."))
    fake_anthropic.script_auxiliary(*[recap_or_title] * 4)
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        listed = await agent.conn.list_sessions(cwd=str(agent.workspace))
        assert [s.session_id for s in listed.sessions] == [parent]  # the children are the parent's work

        asker = await agent.new_session()
        assert await agent.prompt(asker, "what did we learn about the quokkaflux cache?") == "end_turn"
        text, is_error = tool_result(fake_anthropic, "toolu_recall")
        assert not is_error
        assert f"session {first_child}" in text and f"(subagent of {parent[:8]})" in text
        assert f"{FIND_GOALS[0]} (subagent of {parent[:8]})" in text
        assert second_child not in text  # it never said quokkaflux
        listed = await agent.conn.list_sessions(cwd=str(agent.workspace))
        assert {s.session_id for s in listed.sessions} == {parent, asker}

    rows = json.loads(run_cli("sessions", "list", "--json", home=home).stdout)
    by_id = {row["id"]: row for row in rows}
    assert {first_child, second_child, parent} <= set(by_id)
    assert by_id[first_child]["source"] == "subagent" and by_id[first_child]["parent_session_id"] == parent
    assert by_id[first_child]["title"] == FIND_GOALS[0]
    plain = run_cli("sessions", "list", home=home).stdout
    (line,) = [line for line in plain.splitlines() if line.startswith(first_child)]
    assert f"{FIND_GOALS[0]}  (subagent of {parent[:8]})" in line
    (line,) = [line for line in plain.splitlines() if line.startswith(parent)]
    assert "subagent of" not in line


# -- 10. what children cost is the parent's cost


async def test_the_parents_reported_cost_includes_what_its_children_spent(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    own = Usage(input_tokens=2_000, output_tokens=100)
    costly = Usage(input_tokens=500_000, output_tokens=10_000)  # each child call: about a dollar
    router = DelegationRouter().parent(
        MessageReply([ToolUseBlock("toolu_costly", "delegate_task", {"goal": CHILD_GOAL})], usage=own),
        MessageReply([TextBlock("Done.")], usage=own),
    ).child(
        CHILD_GOAL,
        MessageReply([ToolUseBlock("toolu_costly_search", "search_files", {"pattern": "TODO"})], usage=costly),
        MessageReply([TextBlock(CHILD_ANSWER)], usage=costly),
    )
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        parent = await agent.new_session()
        assert await agent.prompt(parent, "count the TODOs") == "end_turn"
        reported = agent.updates(parent, "usage_update")[-1]["cost"]
        (call,) = check_tool_calls(agent, parent).values()
        (child,) = call.final["rawOutput"]["children"]
    assert (child["input_tokens"], child["output_tokens"]) == (1_000_000, 20_000)
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        parent_row, child_row = db.get_session(parent), db.get_session(child["session_id"])
        assert parent_row is not None and child_row is not None
        assert (child_row.input_tokens, child_row.output_tokens) == (1_000_000, 20_000)
        own_cost, child_cost = parent_row.estimated_cost_usd, child_row.estimated_cost_usd
    assert parent_row.input_tokens == 4_000  # the parent's row holds its own calls only
    assert reported["currency"] == "USD" and child_cost > 1.0
    assert reported["amount"] > own_cost
    assert reported["amount"] == pytest.approx(own_cost + child_cost, abs=1e-6)
