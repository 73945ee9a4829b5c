"""The offline demo's scripted model keeps answering sensibly in the demo's chat: it picks its story by
the words of the turn's prompt, follows that turn's tool results, and shows that steers reached it."""

from __future__ import annotations

from typing import Any

from acp_hermes.core.turn_input import STEER_NOTE as AGENT_STEER_NOTE
from acp_hermes.testing import demo_model
from acp_hermes.testing.demo_model import COUNT_SECONDS, COUNT_TO, DEFAULT_PROMPT, respond
from acp_hermes.testing.scripted_model import MessageReply, ModelRequest, TextBlock, ToolUseBlock

PASSED = "The tests pass: `test_calc.py` prints **all tests passed**."


def reply_to(*messages: dict[str, Any]) -> MessageReply:
    body = {"model": "offline-demo", "stream": True, "max_tokens": 100, "messages": list(messages)}
    reply = respond(ModelRequest(0, "POST", "/v1/messages", {}, body, ("127.0.0.1", 1)))
    assert isinstance(reply, MessageReply)
    return reply


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text} for text in texts]}


def said(text: str = "ok") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def called(call_id: str, name: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}]}


def result(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": text}],
            "is_error": error}


def text_of(reply: MessageReply) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, TextBlock))


def tool_of(reply: MessageReply) -> ToolUseBlock | None:
    return next((block for block in reply.content if isinstance(block, ToolUseBlock)), None)


def test_the_story_is_picked_by_the_prompts_words() -> None:
    first = tool_of(reply_to(user(DEFAULT_PROMPT)))
    assert first is not None and first.name == "todo"  # the bug fix: plan first
    tests = tool_of(reply_to(user(DEFAULT_PROMPT), said(), user("run the tests please")))
    assert tests is not None and tests.name == "terminal" and tests.input == {"command": "python3 test_calc.py"}
    readme = tool_of(reply_to(user("Write a README")))
    assert readme is not None and readme.name == "write_file" and readme.input["path"] == "README.md"
    count = reply_to(user("count slowly"))
    assert tool_of(count) is None and count.event_delay == COUNT_SECONDS and f"{COUNT_TO}…" in text_of(count)
    other = reply_to(user("hello"))
    assert tool_of(other) is None
    assert "scripted model, not a real LLM" in text_of(other)
    assert all(command in text_of(other) for command in ("/help", "/rollback", "/budget", "/queue", "/steer"))


def test_it_follows_the_tool_results_of_this_turn_only() -> None:
    """A prompt after a cancelled call: the API merges the two user messages; the new words start a turn."""
    cancelled = {"role": "user", "content": [result("toolu_demo_001", "Cancelled by the user.", error=True),
                                             {"type": "text", "text": "write a README"}]}
    step = tool_of(reply_to(user(DEFAULT_PROMPT), called("toolu_demo_001", "todo"), cancelled))
    assert step is not None and step.name == "write_file"  # not the bug fix's second step, not "did not go through"
    assert step.id != "toolu_demo_001"  # ids stay unique across the conversation


def test_the_tests_story_reports_what_the_run_printed() -> None:
    asked = [user("run the tests"), called("toolu_demo_001", "terminal")]
    ran = result("toolu_demo_001", "all tests passed\n[exit code: 0]")
    passed = reply_to(*asked, {"role": "user", "content": [ran]})
    assert text_of(passed) == PASSED
    failed = reply_to(*asked, {"role": "user", "content": [result(
        "toolu_demo_001", "Traceback …\nAssertionError: 3.0\n[exit code: 1]", error=True)]})
    assert text_of(failed) == "The tests fail (AssertionError: 3.0). Ask me to fix the bug."
    declined = reply_to(*asked, {"role": "user", "content": [result("toolu_demo_001", "Declined.", error=True)]})
    assert text_of(declined).startswith("The last step did not go through")


def test_the_fix_story_finds_no_bug_to_fix_twice() -> None:
    read = [user("fix the bug"), called("toolu_demo_001", "todo"),
            {"role": "user", "content": [result("toolu_demo_001", "Plan")]}, called("toolu_demo_003", "read_file")]
    buggy = reply_to(*read, {"role": "user", "content": [result("toolu_demo_003", demo_model.SAMPLE_FILES["calc.py"])]})
    patch = tool_of(buggy)
    assert patch is not None and patch.name == "patch"
    fixed = demo_model.SAMPLE_FILES["calc.py"].replace("(len(values) + 1)", "len(values)")
    clean = reply_to(*read, {"role": "user", "content": [result("toolu_demo_003", fixed)]})
    assert tool_of(clean) is None and "no bug left" in text_of(clean) and "/rollback 1" in text_of(clean)


def test_steers_are_shown_to_have_reached_it() -> None:
    assert AGENT_STEER_NOTE.startswith(demo_model.STEER_NOTE)  # how the agent marks them
    after_the_end = reply_to(user("count slowly"), said("1… 2…"), user(AGENT_STEER_NOTE, "stop at five"))
    assert tool_of(after_the_end) is None
    assert text_of(after_the_end).startswith("You sent “stop at five” while I was working")
    with_results = reply_to(user("run the tests"), called("toolu_demo_001", "terminal"), {"role": "user", "content": [
        result("toolu_demo_001", "all tests passed\n[exit code: 0]"), {"type": "text", "text": AGENT_STEER_NOTE},
        {"type": "text", "text": "be quick"}]})
    assert text_of(with_results) == f"(Read your note: “be quick”.) {PASSED}"
    carried = reply_to(user("count slowly"), said("1…"), user(
        "hello", "[The user sent this during the previous turn, which ended before you could read it:]\nstop at five"))
    assert text_of(carried).startswith("(Your words from the last turn, “stop at five”, reached me with this prompt.) ")
    assert "not a real LLM" in text_of(carried)  # and "hello" is answered as ever
