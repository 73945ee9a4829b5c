"""The ``clarify`` tool: ask the user a question, optionally with suggested answers.

Where the editor can show a form (``Questioner``), the question is asked there and the turn waits:
the user's answer, a decline or a dismissal is the call's result. Elsewhere, or when no answer
comes within ``ANSWER_TIMEOUT_SECONDS``, the question (choices numbered) is said in the
conversation and the turn ends (``ToolResult.ends_turn``); the result tells the model the answer
comes as the user's next message, so the stored history stays a valid one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from acp_hermes_memory.text import one_line
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import Answer, Question, TextDisplay
from acp_hermes_tools.registry import Access, Guidance, Presentation, Tool, ToolError, ToolResult

MAX_CHOICES = 4
MAX_QUESTION_CHARS = 2000
MAX_CHOICE_CHARS = 200
ANSWER_TIMEOUT_SECONDS = 15 * 60  # long enough to think and look things up; a user who left is asked in the chat

DESCRIPTION = (
    "Ask the user a question when you cannot go on well without their input: the request is "
    "ambiguous, approaches differ in ways only they can weigh, or you lack a fact only they know. "
    "Do not ask for permission (edits and commands ask by themselves) or confirm routine steps. "
    f"Ask one clear question; when the answer is one of a few options, offer up to {MAX_CHOICES} "
    "short `choices` (the user may still answer in their own words). Where the editor can show a "
    "form, the answer comes back as this tool's result; otherwise the question is shown in the chat "
    "and your turn ends: the answer arrives as the user's next message, so call it on its own, after "
    "the work that does not depend on the answer."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS,
                     "description": "The question, complete on its own."},
        "choices": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_CHOICE_CHARS},
            "maxItems": MAX_CHOICES,
            "description": "Optional suggested answers, each short.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}

ASKED_IN_CHAT = ("The question was shown to the user in the chat and this turn has ended. Their answer will "
                 "come as their next message: do not guess it.")
TIMED_OUT = (f"No answer came through the editor's form within {ANSWER_TIMEOUT_SECONDS // 60} minutes, so the "
             f"question was shown in the chat instead. {ASKED_IN_CHAT}")
DECLINED = ("The user declined to answer. Do not ask it again: go on with what you can do without the "
            "answer, or say what it blocks.")
DISMISSED = ("The user closed the question without answering. Go on without the answer if you can, or "
             "say what you need and stop.")


def present_clarify(args: dict[str, Any], scope: ToolScope) -> Presentation:
    return Presentation(f"Ask: {one_line(str(args.get('question') or ''), 80)}")


def chat_text(question: str, choices: Sequence[str]) -> str:
    """The question as the agent says it in the conversation, choices numbered."""
    if not choices:
        return question
    numbered = "\n".join(f"{number}. {choice}" for number, choice in enumerate(choices, start=1))
    return f"{question}\n\n{numbered}\n\nReply with a number or in your own words."


def _result(question: str, answer: Answer) -> ToolResult:
    if answer.outcome == "answered":
        if not answer.text:
            return ToolResult("The user sent the question's form back without an answer.", ok=False)
        shown = TextDisplay(f"**{question}**\n\n{answer.text}")
        return ToolResult(f"The user answered: {answer.text}", display=(shown,))
    declined = answer.outcome == "declined"  # the model's text says what to do next; the user reads what happened
    outcome = "You declined to answer." if declined else "Closed without an answer."
    shown = TextDisplay(f"**{question}**\n\n{outcome}")
    return ToolResult(DECLINED if declined else DISMISSED, ok=False, display=(shown,))


async def clarify(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    question = str(args["question"]).strip()
    if not question:
        raise ToolError("the question is empty")
    choices = tuple(text for choice in args.get("choices") or () if (text := str(choice).strip()))
    answer: Answer | None = None
    with anyio.move_on_after(ANSWER_TIMEOUT_SECONDS) as waiting:  # None at once where the editor has no forms
        answer = await ctx.ask_user(Question(ctx.call_id, question, choices))
    timed_out = waiting.cancelled_caught
    if answer is not None:
        return _result(question, answer)
    said = chat_text(question, choices)
    return ToolResult(TIMED_OUT if timed_out else ASKED_IN_CHAT, display=(TextDisplay("Asked in the chat."),),
                      ends_turn=said)


CLARIFY_TOOL = Tool(
    name="clarify",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=clarify,
    kind="other",
    access=Access.READ,
    parallel_safe=False,
    present=present_clarify,
    trusted_output=True,  # the user's own words: nothing in them is an injection to warn about
    guidance=Guidance(60, "When a request is ambiguous or a decision is the user's to make, ask with `clarify` "
                          "instead of guessing; do not use it to confirm routine steps."),
    delegable=False,  # a child cannot ask the user anything
)
