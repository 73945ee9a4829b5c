"""The offline demo model: a scripted Anthropic-compatible server with a small, fixed story.

It fixes a bug in a sample project so a newcomer sees the whole path work without an API
key: thinking, a plan, a file read, an edit with a diff and a permission prompt, a command
with its output, and a final answer. It follows the conversation it is sent (the number of
tool results so far, and whether the user declined one), so it works with any client.
"""

from __future__ import annotations

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


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            results.extend(block for block in content if block.get("type") == "tool_result")
    return results


def _step(n: int, text: str, tool: str | None = None, args: dict[str, Any] | None = None,
          thinking: str | None = None) -> MessageReply:
    blocks: list[Any] = []
    if thinking:
        blocks.append(ThinkingBlock(thinking, chunks=4))
    blocks.append(TextBlock(text, chunks=max(1, len(text) // 12)))
    if tool is not None:
        blocks.append(ToolUseBlock(f"toolu_demo_{n:02d}", tool, args or {}, chunks=3))
    return MessageReply(blocks, event_delay=0.01)


def respond(request: ModelRequest) -> Reply:
    """The next step of the story, given what has happened so far."""
    body = request.body
    if not body.get("stream"):  # auxiliary calls (session titles)
        return MessageReply([TextBlock("Fix the average() bug")])
    results = _tool_results(body)
    if results and results[-1].get("is_error"):
        return _step(9, "The last step did not go through (it was declined or failed), so I stopped there. "
                        "Tell me how you would like to proceed.")
    steps = [
        lambda: _step(1, "I'll plan this, then look at the code.", "todo", {"todos": _plan(0)},
                      thinking="The tests fail; the likely culprit is in calc.py. Let me plan and read it."),
        lambda: _step(2, "Reading the module under test.", "read_file", {"path": "calc.py"}),
        lambda: _step(3, "`average` divides by `len(values) + 1`; it should divide by `len(values)`. Fixing it.",
                      "patch", {"mode": "replace", "path": "calc.py",
                                "old_string": "sum(values) / (len(values) + 1)",
                                "new_string": "sum(values) / len(values)"}),
        lambda: _step(4, "Now the tests.", "terminal", {"command": "python3 test_calc.py"}),
        lambda: _step(5, "Updating the plan.", "todo", {"todos": _plan(3)}),
        lambda: _step(6, "Done: `average()` divided by one element too many. With the fix in `calc.py`, "
                         "`test_calc.py` prints **all tests passed**."),
    ]
    return steps[min(len(results), len(steps) - 1)]()


def start_demo_model() -> ScriptedModelServer:
    return ScriptedModelServer(respond).start()
