"""The offline demo model: a scripted Anthropic-compatible server with a small, fixed repertoire.

It is no language model: it picks one of a few scripted stories by words in the user's prompt, and
follows the conversation it is sent (the tool results of the turn so far, and whether the user
declined one) so it works with any client. Its main story fixes a bug in a sample project, so a
newcomer sees the whole path work without an API key: thinking, a plan, a file read, an edit with a
diff and a permission prompt, a command with its output, and a final answer. In the demo's chat it
also runs the tests, writes a README (a new file: another permission prompt, and a checkpoint to
``/rollback``), counts slowly (time to try ``/steer`` and Ctrl-C), shows that a steer reached it, and
otherwise says what it knows and which commands to try.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_hermes.testing.scripted_model import (
    MessageReply,
    ModelRequest,
    Reply,
    ScriptedModelServer,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from acp_hermes_memory.fs import atomic_write_text

DEFAULT_PROMPT = "The tests in this project fail. Find the bug in calc.py, fix it and run the tests."

SAMPLE_FILES = {
    "calc.py": (
        '"""A tiny calculator."""\n\n\n'
        "def add(a, b):\n    return a + b\n\n\n"
        "def average(values):\n"
        '    """The arithmetic mean of a non-empty list."""\n'
        "    return sum(values) / (len(values) + 1)\n"
    ),
    "test_calc.py": (
        "from calc import add, average\n\n"
        "assert add(2, 3) == 5\n"
        "assert average([2, 4, 6]) == 4, average([2, 4, 6])\n"
        'print("all tests passed")\n'
    ),
}

_PLAN = [
    {"id": "read", "content": "Read calc.py", "status": "in_progress"},
    {"id": "fix", "content": "Fix the bug", "status": "pending"},
    {"id": "test", "content": "Run the tests", "status": "pending"},
]


def write_sample_project(root: Path) -> None:
    for name, text in SAMPLE_FILES.items():
        atomic_write_text(root / name, text)


def _plan(done: int) -> list[dict[str, str]]:
    plan = []
    for index, item in enumerate(_PLAN):
        status = "completed" if index < done else ("in_progress" if index == done else "pending")
        plan.append({**item, "status": status})
    return plan


# How the agent marks words the user sent into a running turn (core.turn_input.STEER_NOTE), and words
# sent into a turn that ended before its next request (core.turn: they come with the next prompt).
STEER_NOTE = "[The user sent this while you were working"
CARRIED_NOTE = "[The user sent this during the previous turn"

CHAT_PROMPTS = '"fix the bug", "run the tests", "write a README" and "count slowly"'
COUNT_TO = 15
COUNT_SECONDS = 0.4  # between two numbers: time to type a /steer or press Ctrl-C
README = ("# calc\n\nA tiny calculator: `add(a, b)` and `average(values)`.\n\n"
          "Run its tests with `python3 test_calc.py`.\n")
BUG = "(len(values) + 1)"
EXIT_CODE = "[exit code:"  # in a command's result: it ran (and its output says how it went)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _text(block: dict[str, Any]) -> str:
    """A text block's text, or a tool result's (its content is a string or text blocks)."""
    content = block.get("content", block.get("text", ""))
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


class _Turn:
    """What the model is asked now: the prompt that began the turn, what ran since, what the user sent in.

    Read from the user's blocks in order (the API merges consecutive user messages, so a prompt may
    follow the results of a cancelled turn in one message): a text that is not a note in brackets is
    the user's words, except the words of a steer, which follow its note."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.words = ""
        self.results: list[dict[str, Any]] = []  # of the calls this turn made
        self.carried: list[str] = []  # words sent into the previous turn too late, come with this prompt
        self.steers: list[str] = []  # words sent into this turn, read now (they end the request)
        prompt_at = -1  # the message the turn's prompt is in
        after_note = False
        for number, message in enumerate(messages):
            if message.get("role") != "user":
                continue
            for block in _blocks(message):
                text = _text(block)
                if block.get("type") == "tool_result":
                    self.results.append(block)
                elif block.get("type") != "text":
                    continue
                elif after_note:
                    self.steers = [*self.steers, text] if number == len(messages) - 1 else []
                elif text.startswith(CARRIED_NOTE):
                    self.carried.append(text.partition("\n")[2])
                elif not text.startswith(("[", "<")):  # the words of a new prompt: a new turn
                    self.words, self.results, self.carried, self.steers = text, [], [], []
                    prompt_at = number
                after_note = block.get("type") == "text" and text.startswith(STEER_NOTE)
        last = _blocks(messages[-1]) if messages else []
        # The request is there for the steers alone: the model had finished when they came.
        self.steer_only = bool(self.steers) and prompt_at != len(messages) - 1 and not any(
            block.get("type") == "tool_result" for block in last)

    def wants(self, *words: str) -> bool:
        return any(re.search(rf"\b{word}", self.words, re.IGNORECASE) for word in words)


def _step(call_id: str, text: str, tool: str | None = None, args: dict[str, Any] | None = None,
          thinking: str | None = None) -> MessageReply:
    blocks: list[Any] = []
    if thinking:
        blocks.append(ThinkingBlock(thinking, chunks=4))
    blocks.append(TextBlock(text, chunks=max(1, len(text) // 12)))
    if tool is not None:
        blocks.append(ToolUseBlock(call_id, tool, args or {}, chunks=3))
    return MessageReply(blocks, event_delay=0.01)


Story = Callable[[_Turn, str], MessageReply]


def _fix(turn: _Turn, call_id: str) -> MessageReply:
    """Plan, read calc.py, fix the bug (when it is there), run the tests, report."""
    step = len(turn.results)
    if step == 0:
        return _step(call_id, "I'll plan this, then look at the code.", "todo", {"todos": _plan(0)},
                     thinking="The tests fail; the likely culprit is in calc.py. Let me plan and read it.")
    if step == 1:
        return _step(call_id, "Reading the module under test.", "read_file", {"path": "calc.py"})
    if step == 2 and BUG not in _text(turn.results[1]):
        return _step(call_id, "`calc.py` has no bug left: `average()` divides by `len(values)`. (`/rollback` "
                              "lists the checkpoints; `/rollback 1` puts the bug back, to watch the fix again.)")
    if step == 2:
        return _step(call_id, "`average` divides by `len(values) + 1`; it should divide by `len(values)`. "
                              "Fixing it.", "patch", {"mode": "replace", "path": "calc.py",
                                                      "old_string": f"sum(values) / {BUG}",
                                                      "new_string": "sum(values) / len(values)"})
    if step == 3:
        return _step(call_id, "Now the tests.", "terminal", {"command": "python3 test_calc.py"})
    if step == 4:
        return _step(call_id, "Updating the plan.", "todo", {"todos": _plan(3)})
    if "all tests passed" in _text(turn.results[3]):
        return _step(call_id, "Done: `average()` divided by one element too many. With the fix in `calc.py`, "
                              "`test_calc.py` prints **all tests passed**.")
    return _step(call_id, "I fixed `average()`, but the tests still fail; see their output above.")


def _tests(turn: _Turn, call_id: str) -> MessageReply:
    if not turn.results:
        return _step(call_id, "Running the tests.", "terminal", {"command": "python3 test_calc.py"})
    output = _text(turn.results[0])
    if "all tests passed" in output:
        return _step(call_id, "The tests pass: `test_calc.py` prints **all tests passed**.")
    failure = next((line for line in reversed(output.splitlines()) if "Error" in line), "see the output above")
    return _step(call_id, f"The tests fail ({failure.strip()}). Ask me to fix the bug.")


def _readme(turn: _Turn, call_id: str) -> MessageReply:
    if not turn.results:
        return _step(call_id, "Writing a short README.", "write_file", {"path": "README.md", "content": README})
    return _step(call_id, "Wrote `README.md`. Every turn that changes files gets a checkpoint first: `/rollback` "
                          "lists them, and `/rollback <n>` puts back what I changed since checkpoint n.")


def _count(turn: _Turn, call_id: str) -> MessageReply:
    """A slow answer: time to send words into the turn (read when it ends) or cancel it."""
    intro = (f"Counting to {COUNT_TO}, slowly: type `/steer <words>` to send me words (I read them when I "
             "finish), or press Ctrl-C to cancel the turn.\n")
    numbers = "".join(f"{n:>2}… " for n in range(1, COUNT_TO + 1))  # equal pieces: one number per event
    return MessageReply([TextBlock(intro), TextBlock(numbers, chunks=COUNT_TO), TextBlock("\nDone counting.")],
                        event_delay=COUNT_SECONDS)


def _anything_else(turn: _Turn, call_id: str) -> MessageReply:
    return _step(call_id, "I'm the offline demo's scripted model, not a real LLM: I only know "
                          f"{CHAT_PROMPTS}. The slash commands are answered by acp-hermes itself, not by me: "
                          "`/help` lists them; try `/rollback` (the checkpoints taken before my edits), `/budget` "
                          "(spending limits), `/queue <prompt>` and, while I count, `/steer <words>`. With "
                          "`ANTHROPIC_API_KEY` set (or after `acp-hermes setup`), `acp-hermes demo` talks to a "
                          "real model.")


def _story(turn: _Turn) -> Story:
    if turn.wants("fix", "bug"):
        return _fix
    if turn.wants("test"):
        return _tests
    if turn.wants("readme"):
        return _readme
    if turn.wants("count", "slow"):
        return _count
    return _anything_else


def respond(request: ModelRequest) -> Reply:
    """The next step of the story the prompt asked for, given what has happened in its turn so far."""
    body = request.body
    if not body.get("stream"):  # auxiliary calls (session titles)
        return MessageReply([TextBlock("Fix the average() bug")])
    messages = body.get("messages", [])
    turn = _Turn(messages)
    call_id = f"toolu_demo_{len(messages):03d}"  # one id per call across the whole conversation
    if turn.steer_only:  # the model had finished; the agent asks once more because the user said more
        heard = "; ".join(f"“{words}”" for words in turn.steers)
        return _step(call_id, f"You sent {heard} while I was working, and it reached me before the turn ended. "
                              "I'm a scripted model, so all I can do is show that I read it; a real model would "
                              "take it into account from here.")
    if turn.results and turn.results[-1].get("is_error") and EXIT_CODE not in _text(turn.results[-1]):
        return _step(call_id, "The last step did not go through (it was declined or failed), so I stopped there. "
                              "Tell me how you would like to proceed.")
    reply = _story(turn)(turn, call_id)
    notes = [f"(Your words from the last turn, “{words}”, reached me with this prompt.) "
             for words in turn.carried if not turn.results]
    notes += [f"(Read your note: “{words}”.) " for words in turn.steers]
    if notes and isinstance(reply.content[0], TextBlock):
        first = reply.content[0]
        text = "".join(notes) + first.text
        reply = MessageReply([TextBlock(text, chunks=max(1, len(text) // 12)), *reply.content[1:]],
                             event_delay=reply.event_delay)
    return reply


def start_demo_model() -> ScriptedModelServer:
    return ScriptedModelServer(respond).start()
