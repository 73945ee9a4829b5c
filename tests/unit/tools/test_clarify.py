"""The clarify tool: asked through the editor's form when it has one (answer, decline, dismissal,
timeout), else said in the chat with the turn handed to the user."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_hermes_tools import clarify as clarify_module
from acp_hermes_tools import core_tools
from acp_hermes_tools.clarify import ASKED_IN_CHAT, CLARIFY_TOOL, DECLINED, DISMISSED, TIMED_OUT, chat_text
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.contracts import Answer, Question, TextDisplay
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.registry import Access, ToolCall, ToolRegistry, ToolResult
from tests.support.tools import make_context

pytestmark = pytest.mark.anyio

REGISTRY = ToolRegistry([CLARIFY_TOOL])


class FormEditor(LocalEditor):
    """An editor with forms: answers each question with the next scripted answer (None: no form)."""

    def __init__(self, *answers: Answer | None, hold: bool = False) -> None:
        super().__init__()
        self.answers = list(answers)
        self.hold = hold
        self.questions: list[Question] = []

    async def ask_user(self, question: Question) -> Answer | None:
        self.questions.append(question)
        if self.hold:
            await anyio.sleep_forever()
        return self.answers.pop(0)


def context(tmp_path: Path, editor: LocalEditor | None = None) -> ToolContext:
    ctx = make_context(tmp_path, call_id="toolu_ask")
    if editor is not None:
        ctx.editor = editor
    return ctx


async def ask(ctx: ToolContext, **args: object) -> ToolResult:
    return await REGISTRY.dispatch(ToolCall(ctx.call_id, "clarify", dict(args)), ctx)


def test_declaration_and_title() -> None:
    assert (CLARIFY_TOOL.kind, CLARIFY_TOOL.access, CLARIFY_TOOL.parallel_safe) == ("other", Access.READ, False)
    assert [tool.name for tool in core_tools()][-1] == "clarify"
    title = CLARIFY_TOOL.presentation({"question": "Which   database\nshould the cache use?"}, None)  # type: ignore[arg-type]
    assert title.title == "Ask: Which database should the cache use?"


async def test_without_forms_the_question_is_said_in_the_chat_and_the_turn_ends(tmp_path: Path) -> None:
    result = await ask(context(tmp_path), question="Which database?", choices=[" Postgres ", "SQLite"])
    assert result.ok and result.text == ASKED_IN_CHAT
    assert result.ends_turn == "Which database?\n\n1. Postgres\n2. SQLite\n\nReply with a number or in your own words."
    assert result.display == (TextDisplay("Asked in the chat."),)
    plain = await ask(context(tmp_path), question="What should the module be called?")
    assert plain.ends_turn == "What should the module be called?"


async def test_an_editor_that_cannot_show_this_form_falls_back_to_the_chat(tmp_path: Path) -> None:
    editor = FormEditor(None)
    result = await ask(context(tmp_path, editor), question="Ship it?")
    assert editor.questions == [Question("toolu_ask", "Ship it?")]
    assert result.ends_turn == "Ship it?" and result.text == ASKED_IN_CHAT


async def test_a_form_answer_is_the_result_and_the_turn_goes_on(tmp_path: Path) -> None:
    editor = FormEditor(Answer("answered", "SQLite, it is a single-user tool"))
    result = await ask(context(tmp_path, editor), question="Which database?", choices=["Postgres", "SQLite", "  "])
    assert editor.questions == [Question("toolu_ask", "Which database?", ("Postgres", "SQLite"))]
    assert result.ok and result.ends_turn is None
    assert result.text == "The user answered: SQLite, it is a single-user tool"
    assert result.display == (TextDisplay("**Which database?**\n\nSQLite, it is a single-user tool"),)


@pytest.mark.parametrize(("answer", "told"), [
    (Answer("declined"), DECLINED),
    (Answer("dismissed"), DISMISSED),
    (Answer("answered", ""), "The user sent the question's form back without an answer."),
])
async def test_no_answer_is_a_failed_call_that_says_why(tmp_path: Path, answer: Answer, told: str) -> None:
    result = await ask(context(tmp_path, FormEditor(answer)), question="Rename the package?")
    assert (result.ok, result.text, result.ends_turn) == (False, told, None)


@pytest.mark.parametrize(("answer", "shown"), [
    (Answer("declined"), "You declined to answer."), (Answer("dismissed"), "Closed without an answer.")])
async def test_the_user_reads_what_happened_not_the_models_instructions(
        tmp_path: Path, answer: Answer, shown: str) -> None:
    result = await ask(context(tmp_path, FormEditor(answer)), question="Rename the package?")
    assert result.display == (TextDisplay(f"**Rename the package?**\n\n{shown}"),)


async def test_a_form_left_unanswered_times_out_into_the_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clarify_module, "ANSWER_TIMEOUT_SECONDS", 0.05)
    editor = FormEditor(hold=True)
    with anyio.fail_after(5):
        result = await ask(context(tmp_path, editor), question="Which branch?", choices=["main", "dev"])
    assert len(editor.questions) == 1
    assert result.ok and result.text == TIMED_OUT and "15 minutes" in TIMED_OUT
    assert result.ends_turn == chat_text("Which branch?", ["main", "dev"])


async def test_arguments_are_checked(tmp_path: Path) -> None:
    too_many = await ask(context(tmp_path), question="Pick one", choices=["a", "b", "c", "d", "e"])
    assert not too_many.ok and "invalid arguments" in too_many.text
    blank = await ask(context(tmp_path), question="   ")
    assert (blank.ok, blank.text, blank.ends_turn) == (False, "Error: the question is empty", None)
    missing = await ask(context(tmp_path), choices=["a"])
    assert not missing.ok and "'question' is a required property" in missing.text
