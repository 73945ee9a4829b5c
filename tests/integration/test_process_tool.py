"""The ``process`` tool through the real stdio server: the model starts background commands with
``terminal``, then lists them, writes to one (a small Python reading its stdin), waits for it, polls
and stops another; stopping and writing ask as the command that would do the same, and closing the
session leaves no process behind (looked for in /proc).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.testing.scripted_model import MessageReply
from tests.integration.test_background_jobs import SANDBOXES, gone, sleep_token
from tests.integration.test_sandbox import running_with
from tests.integration.test_sandbox_holds import needs_sandbox
from tests.support.acp_harness import EditorClient, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

READER = "import sys\nfor line in sys.stdin:\n    print('echo:', line.strip(), flush=True)\nprint('bye', flush=True)"


def reader_command(token: str) -> str:
    """A Python that echoes each line of its stdin until it ends; ``token`` marks it in /proc."""
    return f"{shlex.quote(sys.executable)} -u -c {shlex.quote(READER)} {token}"


def process(action: str, id: str, **args: object) -> MessageReply:
    return tool_reply("process", {"action": action, **args}, id=id)


def question_text(tool_call: dict[str, Any]) -> str:
    """The text a permission question showed."""
    return "\n".join(item["content"]["text"] for item in tool_call.get("content") or [] if item["type"] == "content")


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_the_model_lists_writes_waits_polls_and_kills_its_background_jobs(
    tmp_path: Path, fake_anthropic: FakeAnthropic, sandbox: str
) -> None:
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\n")
    reader_token, sleeper_token, left_token = sleep_token(), sleep_token(), sleep_token()
    fake_anthropic.script(
        tool_reply("terminal", {"command": reader_command(reader_token), "background": True, "stdin": True},
                   id="toolu_reader"),
        tool_reply("terminal", {"command": f"sleep {sleeper_token}", "background": True}, id="toolu_sleeper"),
        process("list", "toolu_list"),
        process("write", "toolu_hello", job_id="job-1", input="hello\n"),
        process("write", "toolu_world", job_id="job-1", input="world\n", eof=True),
        process("wait", "toolu_wait", job_id="job-1", timeout=60),
        process("poll", "toolu_poll", job_id="job-2"),
        process("kill", "toolu_kill", job_id="job-2"),
        tool_reply("terminal", {"command": f"sleep {left_token}", "background": True}, id="toolu_left"),
        process("list", "toolu_list_again"),
        text_reply("Done."),
    )
    async with running_agent(tmp_path, fake_anthropic) as agent:  # default mode: the editor allows each question
        sid = await agent.new_session()
        assert await agent.prompt(sid, "run the reader and the server") == "end_turn"
        calls = check_tool_calls(agent, sid)
        assert all(call.status == "completed" for call in calls.values()), {i: c.status for i, c in calls.items()}
        assert running_with(reader_token) == []  # it ended when its stdin did

        listed, failed = tool_result(fake_anthropic, "toolu_list")
        assert not failed and listed.startswith("2 background jobs:")
        assert "job-1  pid " in listed and "job-2  pid " in listed and listed.count("running for") == 2
        assert tool_result(fake_anthropic, "toolu_hello")[0].startswith("Sent 6 bytes to job-1's stdin.")
        assert tool_result(fake_anthropic, "toolu_world")[0].startswith(
            "Sent 6 bytes to job-1's stdin and closed its stdin.")
        waited, _ = tool_result(fake_anthropic, "toolu_wait")
        assert waited.startswith("job-1 exited with code 0 after ")
        assert waited.endswith("New output:\necho: hello\necho: world\nbye")
        polled, _ = tool_result(fake_anthropic, "toolu_poll")
        assert polled.startswith("job-2 is running (pid ") and polled.endswith("No new output.")
        killed, _ = tool_result(fake_anthropic, "toolu_kill")
        assert killed.startswith("Stopped job-2: it was killed by SIG"), killed
        assert running_with(sleeper_token) == []
        again, _ = tool_result(fake_anthropic, "toolu_list_again")
        assert "job-1  pid " in again and "exited with code 0" in again and "job-3  pid " in again

        # Reading asks nothing; starting, writing and stopping ask as commands do in the default mode.
        asked = asked_ids(agent.client)
        assert {"toolu_list", "toolu_wait", "toolu_poll", "toolu_list_again"}.isdisjoint(asked)
        assert {"toolu_reader", "toolu_sleeper", "toolu_hello", "toolu_world", "toolu_kill"} <= set(asked)
        kill_question = calls["toolu_kill"].permission_requests[0]["toolCall"]
        assert kill_question["title"].startswith(f"Stop job-2: sleep {sleeper_token}")
        assert "$ kill -TERM -- -" in question_text(kill_question)
        write_question = calls["toolu_hello"].permission_requests[0]["toolCall"]
        assert write_question["title"].startswith("Send input to job-1")
        shown = question_text(write_question)
        if sandbox == "off":  # a job outside any sandbox: asked as such, with the exact input
            assert write_question["title"].endswith("— job-1 runs without an OS sandbox")
            assert reader_token in shown and "It reads these 6 bytes on its stdin:\nhello\n" in shown
        else:  # a sandboxed job: as its command (two lines: in braces) fed the input
            assert reader_token in shown and "\n} <<'EOF'\nhello\nEOF\n" in shown

        assert running_with(left_token)  # job-3 runs on after the turn ...
        await agent.conn.close_session(session_id=sid)
        await gone(lambda: not running_with(left_token))  # ... until the session is closed
    assert running_with(reader_token) == running_with(sleeper_token) == running_with(left_token) == []


# (mode, sandbox) → what writing to and stopping the session's own job do. A write to a job outside any
# sandbox asks even in bypass: what the job makes of its input is past the rules (its state, its program).
CASES = [
    pytest.param("default", "off", ("asked", "asked"), id="default"),
    pytest.param("accept-edits", "off", ("asked", "asked"), id="accept-edits-unsandboxed"),
    pytest.param("accept-edits", "auto", ("unasked", "unasked"), id="accept-edits-sandboxed",
                 marks=SANDBOXES[1].marks),
    pytest.param("bypass", "off", ("asked", "unasked"), id="bypass"),
    pytest.param("plan", "off", ("refused", "refused"), id="plan"),
]


@pytest.mark.parametrize(("mode", "sandbox", "expected"), CASES)
async def test_stopping_and_writing_follow_the_mode_as_commands_do(
    tmp_path: Path, fake_anthropic: FakeAnthropic, mode: str, sandbox: str, expected: tuple[str, str]
) -> None:
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    token = sleep_token()
    fake_anthropic.script(
        tool_reply("terminal", {"command": f"cat; sleep {token}", "background": True, "stdin": True}, id="toolu_start"),
        text_reply("Started."),
        process("write", "toolu_write", job_id="job-1", input="hi\n"),
        process("poll", "toolu_poll", job_id="job-1"),
        process("kill", "toolu_kill", job_id="job-1"),
        text_reply("Done."),
    )
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient()) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "start it") == "end_turn"
        await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
        assert await agent.prompt(sid, "talk to it, then stop it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        asked = asked_ids(agent.client)
        written, write_failed = tool_result(fake_anthropic, "toolu_write")
        stopped, kill_failed = tool_result(fake_anthropic, "toolu_kill")
        polled, poll_failed = tool_result(fake_anthropic, "toolu_poll")
        assert not poll_failed and "toolu_poll" not in asked  # reading asks nothing, even in plan mode
        if expected[0] == "refused":
            assert write_failed and kill_failed and "plan mode" in written and "plan mode" in stopped
            assert polled.startswith("job-1 is running") and running_with(token)
            assert calls["toolu_kill"].status == "failed"
        else:
            assert not write_failed and not kill_failed, (written, stopped)
            assert polled.startswith("job-1 is running") and stopped.startswith("Stopped job-1")
            assert ("toolu_write" in asked, "toolu_kill" in asked) == tuple(e == "asked" for e in expected)
            await gone(lambda: not running_with(token))
        await agent.conn.close_session(session_id=sid)
        await gone(lambda: not running_with(token))


def answering(answers: dict[str, str]) -> Any:
    """An editor's user who answers each call's question with the option of the kind given for its id
    (allow_once for the others)."""

    def policy(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str:
        kind = answers.get(tool_call["toolCallId"], "allow_once")
        return next(option["optionId"] for option in options if option["kind"] == kind)

    return policy


@needs_sandbox
async def test_a_job_outside_the_sandbox_has_each_input_asked_until_the_user_allows_that_job(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """The user lets ``sh`` run outside the sandbox once, in accept-edits. What the model then types into
    it would run unconfined: each write asks, showing the bytes — ``cd`` then a relative ``touch``, which
    the rules would rate as harmless workspace work, included — until the user allows all input to that
    very job; another job outside the sandbox still asks."""
    write_config(tmp_path / "hermes-home", "sandbox: auto\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    shell = {"command": "sh", "background": True, "stdin": True, "outside_sandbox": True}
    fake_anthropic.script(
        tool_reply("terminal", shell, id="toolu_sh1"),
        process("write", "toolu_rejected", job_id="job-1", input=f"touch {outside}/rejected\n"),
        process("write", "toolu_cd", job_id="job-1", input=f"cd {outside}\n"),
        process("write", "toolu_touch", job_id="job-1", input="touch made-by-job-1\n"),
        tool_reply("terminal", shell, id="toolu_sh2"),
        process("write", "toolu_job2", job_id="job-2", input=f"cd {outside} && touch made-by-job-2\n", eof=True),
        process("write", "toolu_exit", job_id="job-1", input="exit\n", eof=True),
        process("wait", "toolu_wait1", job_id="job-1", timeout=60),
        process("wait", "toolu_wait2", job_id="job-2", timeout=60),
        text_reply("Done."),
    )
    client = EditorClient(policy=answering({"toolu_rejected": "reject_once", "toolu_cd": "allow_always"}))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        assert await agent.prompt(sid, "open a shell and make the files") == "end_turn"
        calls = check_tool_calls(agent, sid)

        asked = asked_ids(agent.client)
        assert {"toolu_sh1", "toolu_rejected", "toolu_cd", "toolu_sh2", "toolu_job2"} <= set(asked)
        assert {"toolu_touch", "toolu_exit", "toolu_wait1", "toolu_wait2"}.isdisjoint(asked)  # job-1 is allowed

        question = calls["toolu_rejected"].permission_requests[0]
        assert question["toolCall"]["title"].startswith("Send input to job-1: sh — job-1 runs outside the sandbox")
        shown = question_text(question["toolCall"])
        line = f"touch {outside}/rejected\n"
        assert f"job-1 runs outside the sandbox: $ sh\nIt reads these {len(line)} bytes on its stdin:\n{line}" in shown
        always = [o for o in calls["toolu_cd"].permission_requests[0]["options"] if o["kind"] == "allow_always"]
        assert [o["name"] for o in always] == ["Always allow input to job-1 in this session"]
        refused, failed = tool_result(fake_anthropic, "toolu_rejected")
        assert failed and "declined" in refused

        for call_id in ("toolu_wait1", "toolu_wait2"):
            waited, _ = tool_result(fake_anthropic, call_id)
            assert "exited with code 0" in waited, waited
    assert sorted(path.name for path in outside.iterdir()) == ["made-by-job-1", "made-by-job-2"]  # not "rejected"
