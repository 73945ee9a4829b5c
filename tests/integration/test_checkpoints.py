"""Checkpoints and ``/rollback`` through the real stdio server (issue 18).

A checkpoint is taken before each turn's first change; ``/rollback`` lists them and puts back what
the agent changed since one, after a question that shows the diffs; files the user edited by hand
are kept unless included; a rollback can be rolled back; the conversation can be rewound (the next
request is accepted by the fake that refuses unpaired histories, and ``session/load`` replays the
rewound conversation); the editor's ``_session/rewind`` extension; a workspace that is a git
repository is left untouched; plan mode takes no checkpoint; a server killed during a restore
leaves each file before or after, and the next start finishes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from acp_hermes.config import Paths
from acp_hermes_memory.session_db import SessionDB
from tests.support.acp_harness import (
    AgentProcess,
    EditorClient,
    PermissionPolicy,
    PromptTask,
    running_agent,
    text_block,
)
from tests.support.fake_anthropic import DelegationRouter, FakeAnthropic, text_reply, texts_of, tool_reply
from tests.support.tool_checks import check_tool_calls

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: checkpoints are off"),
]


def is_rollback(tool_call: dict[str, Any]) -> bool:
    return str(tool_call.get("title", "")).startswith("Roll back to checkpoint")


def answering(restore: bool) -> PermissionPolicy:
    """Allow every tool call once; answer a rollback's question by the kind of option: allow or reject."""

    def policy(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        kind = "allow_once" if restore or not is_rollback(tool_call) else "reject_once"
        return next(option["optionId"] for option in options if option["kind"] == kind)

    return policy


def rollback_questions(client: EditorClient) -> list[dict[str, Any]]:
    return [q for q in client.permission_requests if is_rollback(q["toolCall"])]


def question_text(question: dict[str, Any]) -> str:
    """The question's words besides its diffs."""
    return "\n".join(c["content"]["text"] for c in question["toolCall"]["content"] if c["type"] == "content")


def replies(agent: AgentProcess, sid: str) -> str:
    return agent.agent_text(sid)


async def edit_twice(agent: AgentProcess, fake: FakeAnthropic) -> str:
    """Two turns: the first rewrites a.txt and creates new.txt, the second patches a.txt again."""
    fake.script(
        tool_reply("write_file", {"path": "a.txt", "content": "two\n"}, id="toolu_w1"),
        tool_reply("write_file", {"path": "new.txt", "content": "new\n"}, id="toolu_w2"),
        text_reply("first done"),
        tool_reply("patch", {"mode": "replace", "path": "a.txt", "old_string": "two", "new_string": "three"},
                   id="toolu_p"),
        text_reply("second done"),
    )
    fake.script_auxiliary(text_reply("Checkpoints"))
    (agent.workspace / "a.txt").write_text("one\n")
    sid = await agent.new_session()
    assert await agent.prompt(sid, "write things") == "end_turn"
    assert await agent.prompt(sid, "patch it") == "end_turn"
    assert (agent.workspace / "a.txt").read_text() == "three\n"
    return sid


async def test_rollback_lists_then_restores_after_a_question_with_the_diffs(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        await agent.prompt(sid, "/rollback")
        listing = replies(agent, sid)
        assert "1. " in listing and "2. " in listing and "write things" in listing and "patch it" in listing
        assert "`a.txt`" in listing and "`new.txt`" in listing
        assert await agent.prompt(sid, "/rollback 1") == "end_turn"
        calls = check_tool_calls(agent, sid)

    ws = agent.workspace
    assert (ws / "a.txt").read_text() == "one\n"
    assert not (ws / "new.txt").exists()
    [question] = rollback_questions(client)
    # One way to allow, one to keep things as they are: a client that shows only kinds shows two different answers.
    assert [(o["kind"], o["name"]) for o in question["options"]] == [
        ("allow_once", "Restore 2 files"), ("reject_once", "Keep things as they are")]
    # What the flags would add is said in the question, not offered as more ways to allow.
    said = question_text(question)
    assert "`/rollback 1 --conversation` also rewinds it" in said and "--include-edited" not in said
    assert "`/rollback 3` undoes this" in said
    diffs = {Path(c["path"]).name: c for c in question["toolCall"]["content"] if c["type"] == "diff"}
    assert diffs["a.txt"]["oldText"] == "three\n" and diffs["a.txt"]["newText"] == "one\n"
    assert diffs["new.txt"]["oldText"] == "new\n" and diffs["new.txt"]["newText"] == ""  # a deletion
    rollback_call = next(c for c in calls.values() if c.announced["title"].startswith("Roll back to checkpoint 1"))
    assert rollback_call.announced["kind"] == "edit" and rollback_call.final["status"] == "completed"
    assert rollback_call.permission_requests  # the question named the call the editor shows
    reply = replies(agent, sid)
    assert "Restored 1 file to checkpoint 1: `a.txt`." in reply
    assert "Deleted 1 file that did not exist at checkpoint 1: `new.txt`." in reply
    assert "(s)" not in reply and "Restored 0" not in reply


async def test_a_rejected_rollback_changes_nothing_and_says_so_to_the_user(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(False))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        before = len(replies(agent, sid))
        await agent.prompt(sid, "/rollback 1")
        declined = replies(agent, sid)[before:]
        await agent.prompt(sid, "/rollback")
        calls = check_tool_calls(agent, sid)
    assert (agent.workspace / "a.txt").read_text() == "three\n"
    assert declined.strip() == "Nothing was restored: you chose to keep things as they are."
    rollback_call = next(c for c in calls.values() if c.announced["title"].startswith("Roll back to checkpoint 1"))
    shown = " ".join(c["content"]["text"] for c in rollback_call.final["content"] if c["type"] == "content")
    assert "you chose to keep things as they are" in shown
    # The question said the files would be kept as checkpoint 3; declined, there is no checkpoint 3 to name.
    assert "`/rollback 1 --conversation` also rewinds it" in shown and "checkpoint 3" not in shown
    for text in (declined, shown):  # words for the model never reach the user
        assert "Do not retry" not in text and "The user declined" not in text and "ask the user" not in text
    assert "3. " not in replies(agent, sid)  # the restore's own checkpoint was dropped with it


async def test_a_path_outside_the_workspace_is_one_line_and_takes_no_checkpoint(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """``/rollback 1 ../../etc/passwd`` or ``/etc/passwd``: refused in one line, the request answered
    normally (no -32603), no question asked and no checkpoint left behind."""
    client = EditorClient(policy=answering("restore"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        for path in ("../../etc/passwd", "/etc/passwd", "sub/../../outside.txt", "."):
            before = len(replies(agent, sid))
            assert await agent.prompt(sid, f"/rollback 1 {path}") == "end_turn"
            answer = replies(agent, sid)[before:]
            assert answer.strip().count("\n") == 0, answer
            assert f"`{path}` is not a file in the workspace" in answer and "nothing was restored" in answer
        await agent.prompt(sid, "/rollback")
    assert not rollback_questions(client)
    assert "3. " not in replies(agent, sid)  # no restore checkpoint was begun for them
    assert (agent.workspace / "a.txt").read_text() == "three\n"


async def test_session_delete_removes_the_sessions_checkpoints(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """``session/delete``: the session's checkpoints (copies of the workspace's files) go with it; another
    session's in the same workspace stay."""
    from acp_hermes_tools.checkpoints import CheckpointStore

    async with running_agent(tmp_path, fake_anthropic) as agent:
        doomed = await edit_twice(agent, fake_anthropic)
        fake_anthropic.script(tool_reply("write_file", {"path": "b.txt", "content": "b\n"}, id="toolu_b"),
                              text_reply("kept"))
        fake_anthropic.script_auxiliary(text_reply("Kept"))
        kept = await agent.new_session()
        assert await agent.prompt(kept, "write b") == "end_turn"
        store = CheckpointStore.for_workspace(Paths(agent.home).checkpoints, agent.workspace)
        assert {s.ref.split("/")[2] for s in store.snapshots()} == {doomed, kept}
        assert await agent.conn._conn.send_request("session/delete", {"sessionId": doomed}) == {}
        assert {s.ref.split("/")[2] for s in store.snapshots()} == {kept}
    logged = (agent.home / "acp-hermes" / "logs" / "acp-hermes.log").read_text()
    assert "ResourceWarning" not in logged  # every pipe to git closed (Python warnings are logged)


async def test_a_file_edited_by_hand_is_kept_then_restored_alone_and_a_rollback_rolls_back(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        ws = agent.workspace
        (ws / "new.txt").write_text("mine now\n")  # the user's own edit after the agent wrote it
        await agent.prompt(sid, "/rollback 1")
        [question] = rollback_questions(client)
        # The default answer (the one allow option, which a client's key may run) keeps the user's edit.
        assert [(o["kind"], o["name"]) for o in question["options"]] == [
            ("allow_once", "Restore 1 file"), ("reject_once", "Keep things as they are")]
        said = question_text(question)
        assert "`new.txt`" in said and "`/rollback 1 --include-edited` restores it too" in said
        assert [Path(c["path"]).name for c in question["toolCall"]["content"] if c["type"] == "diff"] == ["a.txt"]
        assert (ws / "a.txt").read_text() == "one\n"
        assert (ws / "new.txt").read_text() == "mine now\n"
        assert "Kept 1 file you edited after the agent did: `new.txt`" in replies(agent, sid)

        await agent.prompt(sid, "/rollback 1 new.txt")  # chosen by name: restored (here: deleted)
        assert not (ws / "new.txt").exists()

        await agent.prompt(sid, "/rollback 3")  # checkpoint 3: taken before the first rollback
        check_tool_calls(agent, sid)
    assert (ws / "a.txt").read_text() == "three\n"
    assert (ws / "new.txt").read_text() == "mine now\n"


async def test_the_list_names_only_files_that_differ_from_their_checkpoint(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        ws = agent.workspace

        async def listed() -> dict[str, str]:
            before = len(replies(agent, sid))
            await agent.prompt(sid, "/rollback")
            lines = replies(agent, sid)[before:].splitlines()
            return {line.split(". ")[0]: line for line in lines if line[:1].isdigit()}

        (ws / "a.txt").write_text("one\n")  # put back by hand: as it was at checkpoint 1, not at 2
        lines = await listed()
        assert lines["1"].endswith("changed since: `new.txt`")
        assert lines["2"].endswith("changed since: `a.txt`")
        (ws / "new.txt").unlink()
        lines = await listed()
        assert lines["1"].endswith("nothing to restore") and "changed since" not in lines["1"]
        before = len(replies(agent, sid))
        await agent.prompt(sid, "/rollback 1")
        assert replies(agent, sid)[before:].strip() == (
            "Nothing to restore: what the agent changed since checkpoint 1 is as it was then.")
        assert not rollback_questions(client)
        check_tool_calls(agent, sid)


async def test_only_the_users_own_edits_left_is_nothing_to_restore_unless_included(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        ws = agent.workspace
        (ws / "a.txt").write_text("my a\n")
        (ws / "new.txt").write_text("my new\n")
        before = len(replies(agent, sid))
        await agent.prompt(sid, "/rollback 1")
        assert replies(agent, sid)[before:].strip() == (
            "Nothing to restore but your own edits: you changed `a.txt`, `new.txt` after the agent did "
            "(`/rollback 1 --include-edited` restores them too).")
        assert not rollback_questions(client) and (ws / "a.txt").read_text() == "my a\n"

        await agent.prompt(sid, "/rollback 1 --include-edited")  # asked for by name: the question says so
        [question] = rollback_questions(client)
        # What clients preselect (the first option) keeps the user's own work.
        assert [(o["kind"], o["name"]) for o in question["options"]] == [
            ("reject_once", "Keep things as they are"), ("allow_once", "Restore 2 files")]
        assert "Your own later changes to `a.txt`, `new.txt` are replaced too" in question_text(question)
        check_tool_calls(agent, sid)
    assert (ws / "a.txt").read_text() == "one\n" and not (ws / "new.txt").exists()


async def test_conversation_rewind_keeps_history_valid_and_load_replays_the_rewound_conversation(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        await agent.prompt(sid, "/rollback 2 --conversation")
        [question] = rollback_questions(client)
        assert [o["name"] for o in question["options"]] == [
            "Restore 1 file and rewind the conversation", "Keep things as they are"]
        assert "The conversation is rewound to just before that checkpoint's turn as well" in question_text(question)
        assert (agent.workspace / "a.txt").read_text() == "two\n"
        assert "The conversation is rewound" in replies(agent, sid)
        fake_anthropic.script(text_reply("after the rewind"))
        assert await agent.prompt(sid, "carry on") == "end_turn"
        sent = fake_anthropic.stream_requests[-1]["messages"]
        said = " ".join(" ".join(texts_of(m["content"])) for m in sent)
        assert "write things" in said and "first done" in said
        assert "patch it" not in said and "second done" not in said
        assert sent[-1]["role"] == "user" and "carry on" in " ".join(texts_of(sent[-1]["content"]))
        assert "rolled back the conversation and these files to checkpoint 2" in said

    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        shown = [u for u in loaded.updates(sid, "user_message_chunk")]
        texts = [u["content"]["text"] for u in shown]
        assert "write things" in texts and "carry on" in texts and "patch it" not in texts

    with SessionDB(Paths(tmp_path / "hermes-home").state_db) as db:
        hits = db.search_messages("patch")
        rewound = [db.get_session(hit.session_id) for hit in hits]
        assert any(record is not None and record.source == "rewound" for record in rewound)


async def test_rewind_extension_lists_points_and_rewinds_files_and_conversation(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        init = next(m for m in agent.sent() if isinstance(m.get("result"), dict)
                    and "agentCapabilities" in m["result"])
        assert init["result"]["agentCapabilities"]["_meta"]["sessionRewind"]["modes"] == [
            "files", "conversation", "both"]
        fake_anthropic.script(
            tool_reply("write_file", {"path": "a.txt", "content": "two\n"}, id="toolu_w1"),
            text_reply("first done"),
            tool_reply("write_file", {"path": "a.txt", "content": "three\n"}, id="toolu_w2"),
            text_reply("second done"),
        )
        fake_anthropic.script_auxiliary(text_reply("Rewind"))
        (agent.workspace / "a.txt").write_text("one\n")
        sid = await agent.new_session()
        engine = agent.conn._conn
        first = text_block("first ask").model_dump(by_alias=True, exclude_none=True)
        await engine.send_request("session/prompt", {"sessionId": sid, "prompt": [first], "messageId": "msg-1"})
        await agent.prompt(sid, "second ask")
        points = (await agent.conn.ext_method("session/rewind_points", {"sessionId": sid}))["points"]
        assert points[0]["messageId"] == "msg-1"
        assert [p["text"] for p in points] == ["first ask", "second ask"]
        assert [p["checkpoint"] for p in points] == [1, 2]

        dry = await agent.conn.ext_method("session/rewind", {
            "sessionId": sid, "beforeMessage": {"messageId": points[1]["messageId"]}, "mode": "both",
            "dryRun": True})
        assert dry["rewound"] is False and dry["files"]["restored"] == ["a.txt"]
        assert (agent.workspace / "a.txt").read_text() == "three\n"

        done = await agent.conn.ext_method("session/rewind", {
            "sessionId": sid, "beforeMessage": {"messageId": "ignored", "messageFingerprint": points[1][
                "messageFingerprint"], "messageOccurrence": 1}, "mode": "both"})
        assert done["rewound"] is True and done["files"]["restored"] == ["a.txt"]
        assert done["conversation"]["messagesDropped"] >= 3
        assert (agent.workspace / "a.txt").read_text() == "two\n"
        after = (await agent.conn.ext_method("session/rewind_points", {"sessionId": sid}))["points"]
        assert [p["text"] for p in after] == ["first ask"]

        with pytest.raises(RequestError) as unknown:
            await agent.conn.ext_method("session/rewind", {"sessionId": sid, "beforeMessage": {"messageId": "x"}})
        assert unknown.value.code == -32602 and "not a prompt" in str(unknown.value.data)
        check_tool_calls(agent, sid)
    assert not rollback_questions(client)  # the client asked for it: no question


WRONG_REWINDS = [  # (a field of _session/rewind set wrong, the value) -> refused naming that field
    ("dryRun", "yes"), ("dryRun", 1), ("includeEdited", "true"), ("interruptIfRunning", "no"), ("mode", 5),
    ("mode", "everything"), ("beforeMessage", "user-1"), ("beforeMessage.messageId", 7),
    ("beforeMessage.messageFingerprint", ["sha256:0"]), ("beforeMessage.messageOccurrence", True),
    ("beforeMessage.messageOccurrence", "1"), ("beforeMessage.messageOccurrence", 0), ("_meta", "x"),
]


async def test_a_rewind_with_a_wrong_type_anywhere_is_refused_and_changes_nothing(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """Each malformed param of ``_session/rewind`` (a ``dryRun`` of "yes" above all: it must never be read
    as "not a dry run") is -32602 naming the field, and nothing changes: files, history, the rewind points,
    a running turn (a malformed ``interruptIfRunning`` cancels nothing). ``_session/rewind_points`` too."""
    release = threading.Event()

    def held_reply(request: Any) -> Any:
        release.wait(timeout=15)
        return text_reply("third done")

    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await edit_twice(agent, fake_anthropic)
        points = (await agent.conn.ext_method("session/rewind_points", {"sessionId": sid}))["points"]
        second = points[1]
        calls_before = len(agent.updates(sid, "tool_call"))
        for field, value in WRONG_REWINDS:
            params: dict[str, Any] = {"sessionId": sid, "beforeMessage": {"messageId": second["messageId"]},
                                      "mode": "both"}
            if field.startswith("beforeMessage."):
                params["beforeMessage"][field.split(".")[1]] = value
            else:
                params[field] = value
            with pytest.raises(RequestError) as refused:
                await agent.conn.ext_method("session/rewind", params)
            assert refused.value.code == -32602, field
            assert str(refused.value.data["details"]).startswith(f"{field}: "), refused.value.data
        for params in ({"sessionId": sid, "_meta": 5}, {"sessionId": 5}):
            with pytest.raises(RequestError) as refused:
                await agent.conn.ext_method("session/rewind_points", params)
            assert refused.value.code == -32602

        assert (agent.workspace / "a.txt").read_text() == "three\n" and (agent.workspace / "new.txt").exists()
        assert (await agent.conn.ext_method("session/rewind_points", {"sessionId": sid}))["points"] == points
        assert len(agent.updates(sid, "tool_call")) == calls_before  # no restore was shown

        # A running turn: a malformed interruptIfRunning (and dryRun) is refused, and the turn goes on.
        fake_anthropic.script(held_reply)
        await agent.wait_for_update(sid, "session_info_update")  # the title's request is in: the next is the turn's
        task = PromptTask(agent, sid)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(task.run, "third ask")
                await fake_anthropic.wait_for_request_async(len(fake_anthropic.requests) + 1)
                with pytest.raises(RequestError) as refused:
                    await agent.conn.ext_method("session/rewind", {
                        "sessionId": sid, "beforeMessage": {"messageId": second["messageId"]}, "mode": "both",
                        "interruptIfRunning": "yes", "dryRun": "no"})
                assert refused.value.code == -32602
                release.set()
                with anyio.fail_after(10):
                    await task.done.wait()
        finally:
            release.set()
        assert task.stop_reason == "end_turn"
        last = fake_anthropic.stream_requests[-1]["messages"]
        assert texts_of(last[0])[0] == "write things" and "patch it" in str(last)  # the history is whole
        assert (agent.workspace / "a.txt").read_text() == "three\n"
        check_tool_calls(agent, sid)


def _git(repo: Path, *args: str) -> str:
    """git in the user's repository; ``status`` takes no optional locks, so it never rewrites the index."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def _repository_state(repo: Path) -> tuple[str, bytes, str, bytes, str]:
    return (_git(repo, "status", "--porcelain", "--untracked-files=all"), (repo / ".git" / "index").read_bytes(),
            _git(repo, "for-each-ref"), (repo / ".git" / "config").read_bytes(), _git(repo, "stash", "list"))


async def test_a_workspace_that_is_a_git_repository_is_left_untouched(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    _git(ws, "init", "-q")
    (ws / "tracked.txt").write_text("tracked\n")
    (ws / ".gitignore").write_text("ignored/\n")
    (ws / "ignored").mkdir()
    (ws / "ignored" / "big.log").write_text("log\n")
    _git(ws, "add", "tracked.txt", ".gitignore")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (ws / "staged.txt").write_text("staged\n")
    _git(ws, "add", "staged.txt")
    fake_anthropic.script(
        tool_reply("write_file", {"path": "a.txt", "content": "agent\n"}, id="toolu_w"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Git"))
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client, workspace=ws) as agent:
        before = _repository_state(ws)
        sid = await agent.new_session()
        await agent.prompt(sid, "write")
        assert (ws / "a.txt").exists()
        await agent.prompt(sid, "/rollback 1")
        assert not (ws / "a.txt").exists()
        assert _repository_state(ws) == before
        assert (ws / "ignored" / "big.log").read_text() == "log\n"
    stores = list(Paths(tmp_path / "hermes-home").checkpoints.iterdir())
    assert stores and all(ws not in store.parents for store in stores)


async def test_plan_mode_takes_no_checkpoint(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "a.txt", "content": "x\n"}, id="toolu_w"),
        text_reply("planned"),
    )
    fake_anthropic.script_auxiliary(text_reply("Plan"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        await agent.conn.set_config_option(config_id="mode", session_id=sid, value="plan")
        await agent.prompt(sid, "plan it")
        await agent.prompt(sid, "/rollback")
    assert "No checkpoints yet" in replies(agent, sid)
    assert not (agent.workspace / "a.txt").exists()


async def test_a_read_only_command_takes_no_checkpoint_and_a_writing_one_does(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("terminal", {"command": "ls -la"}, id="toolu_ls"),
        text_reply("looked"),
        tool_reply("terminal", {"command": "echo hi > made.txt"}, id="toolu_echo"),
        text_reply("made"),
    )
    fake_anthropic.script_auxiliary(text_reply("Commands"))
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        await agent.prompt(sid, "look")
        await agent.prompt(sid, "/rollback")
        assert "No checkpoints yet" in replies(agent, sid)
        await agent.prompt(sid, "make a file")
        assert (agent.workspace / "made.txt").exists()
        await agent.prompt(sid, "/rollback 1")
    assert not (agent.workspace / "made.txt").exists()


async def test_a_delegated_childs_first_change_is_checkpointed_as_its_parents_turn(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    goal = "Write the child's file"
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": goal}, id="toolu_delegate"),
        text_reply("The helper wrote it."),
    ).child(
        goal,
        tool_reply("write_file", {"path": "child.txt", "content": "from the child\n"}, id="toolu_child_write"),
        text_reply("written"),
    )
    fake_anthropic.script(*router.items())
    fake_anthropic.script_auxiliary(text_reply("Delegated"))
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "have a helper write it") == "end_turn"
        assert (agent.workspace / "child.txt").exists()
        await agent.prompt(sid, "/rollback")
        listing = replies(agent, sid)
        assert "1. " in listing and "have a helper write it" in listing and "`child.txt`" in listing
        assert "2. " not in listing  # one checkpoint: the parent's turn, taken before the child's write
        await agent.prompt(sid, "/rollback 1")
    assert not (agent.workspace / "child.txt").exists()


async def test_killed_during_a_restore_each_file_is_before_or_after_and_the_next_start_finishes(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    count = 300
    fake_anthropic.script(
        tool_reply("terminal", {"command": f"for i in $(seq 1 {count}); do echo new > f$i.txt; done"},
                   id="toolu_many"),
        text_reply("wrote them"),
    )
    fake_anthropic.script_auxiliary(text_reply("Kill"))
    ws = tmp_path / "workspace"
    ws.mkdir()
    for i in range(1, count + 1):
        (ws / f"f{i}.txt").write_text("old\n")
    stores = Paths(tmp_path / "hermes-home").checkpoints
    client = EditorClient(policy=answering(True))
    async with running_agent(tmp_path, fake_anthropic, client=client, workspace=ws) as agent:
        sid = await agent.new_session()
        await agent.prompt(sid, "rewrite them")
        assert {(ws / f"f{i}.txt").read_text() for i in range(1, count + 1)} == {"new\n"}
        # The server is killed as soon as its restore journal appears (or, if the restore was quicker
        # than the watcher, right after): either way each file must be whole, and the next start done.
        watcher = threading.Thread(target=_kill_on_journal, args=(stores, agent.process.pid), daemon=True)
        watcher.start()
        with pytest.raises(Exception):  # noqa: B017 (the connection dies under the request)
            await agent.prompt(sid, "/rollback 1")
            os.kill(agent.process.pid, signal.SIGKILL)
            await agent.process.wait()
            raise ConnectionError("killed after the restore")
        watcher.join()
        await agent.process.wait()
        agent.wire.messages.clear()  # what a killed server sent last may be cut short
    assert {(ws / f"f{i}.txt").read_text() for i in range(1, count + 1)} <= {"old\n", "new\n"}
    fake_anthropic.script_auxiliary(text_reply("Again"))
    async with running_agent(tmp_path, fake_anthropic, workspace=ws) as agent:
        sid = await agent.new_session()
        await agent.prompt(sid, "/rollback")  # a session in the workspace: the store's journal is finished first
    assert {(ws / f"f{i}.txt").read_text() for i in range(1, count + 1)} == {"old\n"}
    assert not list(stores.glob("*/restore-journal.json"))


def _kill_on_journal(stores: Path, pid: int) -> None:
    """Kill ``pid`` the moment a restore journal exists under ``stores`` (bounded: 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(stores.glob("*/restore-journal.json")):
            break
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
