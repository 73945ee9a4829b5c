"""Every core tool through the real stdio server, without client fs or terminal capabilities.

The server reads and writes the disk and runs local subprocesses here (the client bridge is
covered in test_client_bridge.py). Besides what each tool does, these tests pin the rendering
the editor gets: kinds, titles, absolute locations with lines, rawInput, fenced output, diffs,
and that every call — also the broken ones — ends with exactly one final status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.testing.scripted_model import MessageReply, ToolUseBlock
from tests.support.acp_harness import EditorClient, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result, tool_result_order

pytestmark = pytest.mark.anyio

APP = "def main():\n    return 1\n"
README = "# App\n"


def calls_reply(*calls: tuple[str, str, Mapping[str, Any]]) -> MessageReply:
    """One model response with several tool calls ``(id, name, input)``, in that order."""
    return MessageReply([ToolUseBlock(cid, name, dict(args), chunks=3) for cid, name, args in calls],
                        stop_reason="tool_use")


@dataclass(frozen=True)
class UnparsableToolUse(ToolUseBlock):
    """A tool call whose streamed arguments are cut off mid-JSON."""

    def deltas(self) -> list[dict[str, Any]]:
        return [{"type": "input_json_delta", "partial_json": '{"path": "app.py", "lim'}]


def make_project(root: Path) -> None:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "README.md").write_text(README)


async def test_file_tools_search_and_todo_on_local_disk(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    multi_file_patch = (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def main():\n-    return 2\n+    return 3\n"
        "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # App\n+Now with tests.\n"
    )
    todos = [
        {"id": "1", "content": "Read the code", "status": "completed"},
        {"id": "2", "content": "Fix the bug", "status": "in_progress"},
        {"id": "3", "content": "Run the tests", "status": "pending"},
    ]
    fake_anthropic.script(
        tool_reply("read_file", {"path": "src/app.py"}, id="toolu_read"),
        tool_reply("write_file", {"path": "notes/todo.txt", "content": "first\nsecond\n"}, id="toolu_write"),
        tool_reply("patch", {"mode": "replace", "path": "src/app.py", "old_string": "return 1",
                             "new_string": "return 2"}, id="toolu_replace"),
        tool_reply("patch", {"mode": "patch", "patch": multi_file_patch}, id="toolu_multi"),
        tool_reply("search_files", {"pattern": "return [0-9]"}, id="toolu_search"),
        tool_reply("todo", {"todos": todos}, id="toolu_todo"),
        text_reply("All done."),
    )
    fake_anthropic.script_auxiliary(text_reply("Tools tour"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        make_project(agent.workspace)
        app = agent.workspace / "src" / "app.py"
        readme = agent.workspace / "README.md"
        notes = agent.workspace / "notes" / "todo.txt"
        sid = await agent.new_session()
        assert await agent.prompt(sid, "tour the tools") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert list(calls) == ["toolu_read", "toolu_write", "toolu_replace", "toolu_multi", "toolu_search", "toolu_todo"]
    assert all(view.status == "completed" for view in calls.values())
    assert agent.client.reads == [] and agent.client.writes == []  # no fs capability: the disk is used

    read = calls["toolu_read"]
    assert (read.announced["kind"], read.announced["title"]) == ("read", "Read src/app.py")
    assert read.announced["rawInput"] == {"path": "src/app.py"}
    assert read.announced["locations"] == [{"path": str(app), "line": 1}]
    assert read.statuses == ["pending", "in_progress", "completed"]
    assert read.text() == f"```python\n{APP}```"
    assert tool_result(fake_anthropic, "toolu_read") == ("1|def main():\n2|    return 1", False)

    write = calls["toolu_write"]
    assert (write.announced["kind"], write.announced["title"]) == ("edit", "Write notes/todo.txt")
    assert notes.read_text() == "first\nsecond\n"
    assert write.content("diff") == [{"type": "diff", "path": str(notes), "newText": "first\nsecond\n"}]
    assert write.final["locations"] == [{"path": str(notes), "line": 1}]
    asked = write.permission_requests[0]["toolCall"]
    assert asked["content"] == write.content("diff")  # the user approved exactly what was written

    replace = calls["toolu_replace"]
    assert replace.announced["title"] == "Edit src/app.py"
    assert replace.content("diff") == [
        {"type": "diff", "path": str(app), "oldText": APP, "newText": APP.replace("return 1", "return 2")}
    ]
    assert replace.final["locations"] == [{"path": str(app), "line": 2}]

    multi = calls["toolu_multi"]
    assert multi.announced["title"] == "Edit 2 files"
    assert {loc["path"] for loc in multi.announced["locations"]} == {str(app), str(readme)}
    assert app.read_text() == "def main():\n    return 3\n"
    assert readme.read_text() == "# App\nNow with tests.\n"
    assert {(d["path"], d["oldText"], d["newText"]) for d in multi.content("diff")} == {
        (str(app), "def main():\n    return 2\n", "def main():\n    return 3\n"),
        (str(readme), README, "# App\nNow with tests.\n"),
    }
    assert len(multi.permission_requests) == 1  # one approval for the whole patch
    assert len(multi.permission_requests[0]["toolCall"]["content"]) == 2

    search = calls["toolu_search"]
    assert (search.announced["kind"], search.announced["title"]) == ("search", 'Search "return [0-9]"')
    assert search.permission_requests == []
    assert {"path": str(app), "line": 2} in search.final["locations"]
    assert "src/app.py:2:    return 3" in tool_result(fake_anthropic, "toolu_search")[0]

    todo = calls["toolu_todo"]
    assert todo.permission_requests == []
    plans = agent.updates(sid, "plan")
    assert plans[-1]["entries"] == [
        {"content": "Read the code", "priority": "medium", "status": "completed"},
        {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
        {"content": "Run the tests", "priority": "medium", "status": "pending"},
    ]
    assert "Plan (1/3 done)" in tool_result(fake_anthropic, "toolu_todo")[0]


async def test_local_terminal_streams_fenced_output_with_exit_code(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("terminal", {"command": "pwd; echo '```'; exit 3"}, id="toolu_term"),
        tool_reply("terminal", {"command": "head -c 100000 /dev/zero | tr '\\0' x"}, id="toolu_big"),
        text_reply("It failed."),
    )
    fake_anthropic.script_auxiliary(text_reply("Terminal"))
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient()) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "run it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        call = calls["toolu_term"]

    assert (call.announced["kind"], call.announced["title"]) == ("execute", "Run pwd; echo '```'; exit 3")
    assert call.status == "failed"  # a non-zero exit fails the call
    assert call.final["rawOutput"] == {"exit_code": 3, "timed_out": False, "truncated": False}
    # Output is plain fenced text (never Markdown) and the fence outgrows the backticks it contains.
    assert call.text() == f"````\n$ pwd; echo '```'; exit 3\n{agent.workspace}\n```\n[exit code: 3]\n````"
    live = [u for u in call.updates if u.get("status") == "in_progress" and u.get("content")]
    assert live, "the running command was shown before it finished"
    text, is_error = tool_result(fake_anthropic, "toolu_term")
    assert (text, is_error) == (f"{agent.workspace}\n```\n[exit code: 3]", True)
    asked = call.permission_requests[0]["toolCall"]
    assert asked["content"] == [
        {"type": "content", "content": {"type": "text", "text": "````sh\n$ pwd; echo '```'; exit 3\n````"}}
    ]
    # A huge result reaches the model capped, with a note saying so; the call itself succeeded.
    big_text, big_error = tool_result(fake_anthropic, "toolu_big")
    assert calls["toolu_big"].status == "completed" and not big_error
    assert len(big_text) < 70_000 and "result capped at 60,000 characters" in big_text


async def test_read_output_uses_a_fence_longer_than_any_in_the_file(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    markdown = "# Doc\n\n````python\nprint('hi')\n````\n"
    fake_anthropic.script(
        tool_reply("read_file", {"path": "doc.md"}, id="toolu_doc"), text_reply("ok"),
    )
    fake_anthropic.script_auxiliary(text_reply("Fences"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "doc.md").write_text(markdown)
        sid = await agent.new_session()
        await agent.prompt(sid, "read the doc")
        call = check_tool_calls(agent, sid)["toolu_doc"]
    assert call.text() == f"`````markdown\n{markdown}`````"


async def test_every_broken_call_ends_failed_and_the_model_is_told(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("no_such_tool", {"x": 1}, id="toolu_unknown"),
        tool_reply("read_file", {"limit": 5}, id="toolu_invalid"),
        MessageReply([UnparsableToolUse("toolu_unparsable", "read_file", {})], stop_reason="tool_use"),
        tool_reply("write_file", {"path": "blocker/inner.txt", "content": "x"}, id="toolu_raises"),
        tool_reply("read_file", {"path": "missing.py"}, id="toolu_missing"),
        tool_reply("terminal", {"command": "sleep 30", "timeout": 1}, id="toolu_timeout"),
        text_reply("Lots of errors."),
    )
    fake_anthropic.script_auxiliary(text_reply("Errors"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "blocker").write_text("a file where a directory is expected\n")
        (agent.workspace / "missing_.py").write_text("")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "break things") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert {call_id: view.status for call_id, view in calls.items()} == {
        "toolu_unknown": "failed", "toolu_invalid": "failed", "toolu_unparsable": "failed",
        "toolu_raises": "failed", "toolu_missing": "failed", "toolu_timeout": "failed",
    }
    assert calls["toolu_unknown"].announced["kind"] == "other"
    assert calls["toolu_unparsable"].announced["rawInput"] == {"_unparsed": '{"path": "app.py", "lim'}
    expected = {
        "toolu_unknown": "unknown tool 'no_such_tool'",
        "toolu_invalid": "'path' is a required property",
        "toolu_unparsable": "not valid JSON",
        "toolu_raises": "write_file failed",
        "toolu_missing": "missing_.py",  # the missing-file error suggests the close name
        "toolu_timeout": "timed out after 1s",
    }
    for call_id, fragment in expected.items():
        text, is_error = tool_result(fake_anthropic, call_id)
        assert fragment in text, (call_id, text)
        assert is_error, call_id
        assert calls[call_id].text(), f"{call_id} ended without telling the user why"
    assert calls["toolu_timeout"].final["rawOutput"]["timed_out"] is True
    assert agent.agent_text(sid) == "Lots of errors."


async def test_parallel_reads_keep_call_order_and_a_write_between_them_forces_order(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        calls_reply(("toolu_a", "read_file", {"path": "a.txt"}), ("toolu_b", "read_file", {"path": "b.txt"})),
        calls_reply(
            ("toolu_before", "read_file", {"path": "a.txt"}),
            ("toolu_change", "write_file", {"path": "a.txt", "content": "changed\n"}),
            ("toolu_after", "read_file", {"path": "a.txt"}),
        ),
        text_reply("Read both."),
    )
    fake_anthropic.script_auxiliary(text_reply("Parallel"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "a.txt").write_text("alpha\n")
        (agent.workspace / "b.txt").write_text("beta\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read") == "end_turn"
        calls = check_tool_calls(agent, sid)
        order = [(u["toolCallId"], u.get("status")) for u in agent.updates(sid) if "toolCallId" in u]

    assert all(view.status == "completed" for view in calls.values())
    # Both calls of the batch were announced before either ran, and results go back in call order.
    assert order.index(("toolu_b", "pending")) < order.index(("toolu_a", "in_progress"))
    assert tool_result_order(fake_anthropic, 1) == ["toolu_a", "toolu_b"]
    assert tool_result(fake_anthropic, "toolu_a")[0] == "1|alpha"
    assert tool_result(fake_anthropic, "toolu_b")[0] == "1|beta"
    # A write between reads splits the batch: the later read starts after the write finished.
    assert order.index(("toolu_before", "completed")) < order.index(("toolu_change", "in_progress"))
    assert order.index(("toolu_change", "completed")) < order.index(("toolu_after", "in_progress"))
    assert tool_result(fake_anthropic, "toolu_before")[0] == "1|alpha"
    assert tool_result(fake_anthropic, "toolu_after")[0] == "1|changed"
    assert tool_result_order(fake_anthropic, 2) == ["toolu_before", "toolu_change", "toolu_after"]


async def test_relative_paths_resolve_against_the_session_cwd_not_the_process_cwd(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    process_cwd = tmp_path / "process-cwd"
    project = tmp_path / "project"
    make_project(process_cwd)
    (process_cwd / "src" / "app.py").write_text("# the wrong file\n")
    make_project(project)
    fake_anthropic.script(
        tool_reply("read_file", {"path": "src/app.py"}, id="toolu_read"),
        tool_reply("write_file", {"path": "out/result.txt", "content": "ok\n"}, id="toolu_write"),
        tool_reply("patch", {"mode": "replace", "path": "./src/../src/app.py", "old_string": "return 1",
                             "new_string": "return 5"}, id="toolu_patch"),
        tool_reply("terminal", {"command": "pwd && ls src"}, id="toolu_pwd"),
        tool_reply("search_files", {"pattern": "app", "target": "files"}, id="toolu_find"),
        text_reply("ok"),
    )
    fake_anthropic.script_auxiliary(text_reply("Paths"))
    async with running_agent(tmp_path, fake_anthropic, workspace=process_cwd, client=EditorClient()) as agent:
        sid = await agent.new_session(cwd=project)
        assert await agent.prompt(sid, "where am I") == "end_turn"
        calls = check_tool_calls(agent, sid)

    root = project.resolve()
    assert tool_result(fake_anthropic, "toolu_read")[0] == "1|def main():\n2|    return 1"
    assert calls["toolu_read"].announced["locations"] == [{"path": str(root / "src" / "app.py"), "line": 1}]
    assert (project / "out" / "result.txt").read_text() == "ok\n"
    assert not (process_cwd / "out").exists()
    assert (project / "src" / "app.py").read_text() == APP.replace("return 1", "return 5")
    assert (process_cwd / "src" / "app.py").read_text() == "# the wrong file\n"
    assert calls["toolu_patch"].content("diff")[0]["path"] == str(root / "src" / "app.py")  # `..` resolved
    assert tool_result(fake_anthropic, "toolu_pwd")[0].startswith(f"{root}\napp.py\n")
    assert "src/app.py" in tool_result(fake_anthropic, "toolu_find")[0]
    assert all(view.status == "completed" for view in calls.values())
