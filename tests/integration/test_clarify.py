"""The clarify tool through the real stdio server.

An editor that advertises forms gets an ``elicitation/create`` tied to the call, and the user's
answer, decline or dismissal is the call's result; without forms (or when the editor refuses the
form) the question is said in the chat and the turn ends, the answer comes as the next prompt and
the history the model gets then is a valid one; ``session/cancel`` while the form is open ends
the turn cleanly.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_hermes.core.loop import CANCELLED_RESULT
from acp_hermes.testing.request_checks import request_problem
from acp_hermes_tools.clarify import ASKED_IN_CHAT, DECLINED, DISMISSED
from tests.support.acp_harness import EditorClient, FormAnswer, PromptTask, cancel_and_wait, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

ASK = {"question": "Which database should the cache use?", "choices": ["Postgres", "SQLite"]}
SAID = ("\n\nWhich database should the cache use?\n\n1. Postgres\n2. SQLite\n\n"
        "Reply with a number or in your own words.")


def script(fake: FakeAnthropic) -> None:
    fake.script(tool_reply("clarify", ASK, id="toolu_ask", text="One question first."), text_reply("Noted."))
    fake.script_auxiliary(text_reply("Cache database"))


@pytest.mark.parametrize(("answer", "told"), [
    (("accept", {"choice": "SQLite"}), ("The user answered: SQLite", False)),
    (("accept", {"choice": "Postgres", "answer": "MariaDB, we run it already"}),
     ("The user answered: MariaDB, we run it already", False)),
    (("decline", None), (DECLINED, True)),
    (("cancel", None), (DISMISSED, True)),
])
async def test_a_form_answers_within_the_turn(
    tmp_path: Path, fake_anthropic: FakeAnthropic, answer: FormAnswer, told: tuple[str, bool]
) -> None:
    script(fake_anthropic)
    client = EditorClient(form_answers=[answer])
    async with running_agent(tmp_path, fake_anthropic, client=client, forms=True) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "add a cache") == "end_turn"
        calls = check_tool_calls(agent, sid)
        assert agent.agent_text(sid) == "One question first.Noted."  # nothing said in the chat
    [form] = client.forms
    assert form == {
        "message": ASK["question"], "sessionId": sid, "toolCallId": "toolu_ask",
        "requestedSchema": {"type": "object", "properties": {
            "choice": {"type": "string", "title": "Choose",
                       "oneOf": [{"const": "Postgres", "title": "Postgres"}, {"const": "SQLite", "title": "SQLite"}]},
            "answer": {"type": "string", "title": "Or answer in your own words"},
        }},
    }
    assert calls["toolu_ask"].status == ("failed" if told[1] else "completed")
    assert tool_result(fake_anthropic, "toolu_ask") == told
    assert len(fake_anthropic.stream_requests) == 2  # the model went on with the answer in the same turn


async def test_a_question_without_choices_asks_for_free_text(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply("clarify", {"question": "Name the module?"}, id="toolu_name"),
                          text_reply("Creating it."))
    fake_anthropic.script_auxiliary(text_reply("Module name"))
    client = EditorClient(form_answers=[("accept", {"answer": "ingest"})])
    async with running_agent(tmp_path, fake_anthropic, client=client, forms=True) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "make a module") == "end_turn"
    assert client.forms[0]["requestedSchema"] == {
        "type": "object", "properties": {"answer": {"type": "string", "title": "Your answer"}}, "required": ["answer"]}
    assert tool_result(fake_anthropic, "toolu_name") == ("The user answered: ingest", False)


@pytest.mark.parametrize("forms", [False, True], ids=["no-forms", "form-refused"])
async def test_without_a_form_the_question_ends_the_turn_and_the_answer_comes_next(
    tmp_path: Path, fake_anthropic: FakeAnthropic, forms: bool
) -> None:
    script(fake_anthropic)
    client = EditorClient(form_answers=[("error", None)])  # used only where forms are advertised
    async with running_agent(tmp_path, fake_anthropic, client=client, forms=forms) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "add a cache") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1  # the turn ended on the question
        assert agent.agent_text(sid) == "One question first." + SAID
        assert check_tool_calls(agent, sid)["toolu_ask"].status == "completed"
        assert len(client.forms) == (1 if forms else 0)

        assert await agent.prompt(sid, "2") == "end_turn"
        assert agent.agent_text(sid).endswith("Noted.")
    sent = fake_anthropic.stream_requests[1]
    assert request_problem(sent) is None
    answer, reply = sent["messages"][-1]["content"]  # the call's result and the user's answer, one message
    assert (answer["tool_use_id"], reply["text"]) == ("toolu_ask", "2")
    assert tool_result(fake_anthropic, "toolu_ask") == (ASKED_IN_CHAT, False)
    assert all(SAID.strip() not in str(message) for message in sent["messages"])  # said, not model history

    async with running_agent(tmp_path, fake_anthropic) as reloaded:
        await reloaded.conn.load_session(cwd=str(reloaded.workspace), session_id=sid, mcp_servers=[])
        assert reloaded.agent_text(sid) == "One question first." + SAID + "Noted."


async def test_cancel_while_the_form_is_open(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply("clarify", ASK, id="toolu_held"), text_reply("Back again."))
    fake_anthropic.script_auxiliary(text_reply("Cancelled question"))
    client = EditorClient(hold_forms=True)
    async with running_agent(tmp_path, fake_anthropic, client=client, forms=True) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "add a cache")
            with anyio.fail_after(10):
                await client.form_shown.wait()
            assert await cancel_and_wait(agent, task) == "cancelled"
            client.release_forms.set()  # the editor closes its form late: nothing is waiting for it any more
        assert check_tool_calls(agent, sid)["toolu_held"].status == "failed"
        assert len(fake_anthropic.stream_requests) == 1
        assert await agent.prompt(sid, "are you there?") == "end_turn"
        assert agent.agent_text(sid) == "Back again."
    assert tool_result(fake_anthropic, "toolu_held") == (CANCELLED_RESULT, True)
