"""Slash commands in-process: answered locally (no model call), options changed through the session,
unknown words left to the model."""

from __future__ import annotations

import pytest

from acp_hermes.core.choices import MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION
from acp_hermes.core.commands import COMMANDS, CommandReply, parse, run_command, usage
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.permissions.modes import Mode
from tests.support.fake_provider import text
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio


async def reply_to(env: Env, line: str) -> tuple[str, str | None]:
    session = await env.manager().create(env.cwd, ())
    reply = await run_command(session, [TextPart(line)])
    assert reply is not None
    return reply.text, reply.changed_option


@pytest.mark.parametrize("line", ["/compactify", "please /help", "/ help", "hello"])
def test_unknown_words_and_ordinary_text_are_not_commands(line: str) -> None:
    assert parse([TextPart(line)]) is None


def test_every_command_with_an_argument_declares_its_hint() -> None:
    takes_argument = {"mode", "model", "thinking", "compact", "title", "search", "init", "export", "rollback", "budget",
                      "steer", "queue", "skills", "trust"}
    assert {name for name, command in COMMANDS.items() if command.hint} == takes_argument


async def test_help_lists_every_command_with_its_hint(env: Env) -> None:
    shown, changed = await reply_to(env, "/help")
    assert changed is None
    for name, command in COMMANDS.items():
        assert f"`{usage(command)}`" in shown and f"/{name}" in usage(command)
    assert "`/steer <text>`" in shown  # the argument reads as a placeholder, not as words of the command
    assert "`/model [model name]`" in shown and "`/export [file path]`" in shown  # one that may be left out
    assert "optional:" not in shown and "[brackets] may be left out" in shown


async def test_an_argument_help_marks_optional_may_really_be_left_out(env: Env) -> None:
    """Each command /help shows with [brackets] answers without its argument; each with <…> asks for it."""
    session = await env.manager().create(env.cwd, ())
    for name, command in COMMANDS.items():
        if not command.hint or name in ("init", "compact", "rollback"):  # a model turn or a checkpoint list
            continue
        reply = await run_command(session, [TextPart(f"/{name}")])
        assert reply is not None
        asks = reply.text.startswith("Give ")
        assert asks is not command.hint.startswith("optional: "), (name, reply.text)


@pytest.mark.parametrize(
    ("line", "option", "check"),
    [
        ("/mode plan", MODE_OPTION, lambda s: s.choices.mode is Mode.PLAN),
        ("/model claude-other", MODEL_OPTION, lambda s: s.choices.model == "claude-other"),
        ("/thinking high", THOUGHT_OPTION, lambda s: s.choices.thought_level == "high"),
    ],
)
async def test_switching_commands_change_the_session_and_say_which_option(
    env: Env, line: str, option: str, check: object
) -> None:
    session = await env.manager().create(env.cwd, ())
    reply = await run_command(session, [TextPart(line)])
    assert reply is not None and reply.changed_option == option
    assert callable(check) and check(session)
    assert not env.provider.requests  # answered locally


@pytest.mark.parametrize("line", ["/mode yolo", "/model gpt-nothing", "/thinking extreme"])
async def test_an_invalid_value_is_explained_and_changes_nothing(env: Env, line: str) -> None:
    session = await env.manager().create(env.cwd, ())
    before = session.choices
    reply = await run_command(session, [TextPart(line)])
    assert reply is not None and reply.text.startswith("Could not change") and reply.changed_option is None
    assert session.choices == before


async def test_showing_commands_describe_the_current_state(env: Env) -> None:
    assert (await reply_to(env, "/mode"))[0].startswith("Mode: `default`.")
    assert "`claude-other`" in (await reply_to(env, "/model"))[0]
    assert (await reply_to(env, "/thinking"))[0].startswith("Thinking: `off`")
    assert (await reply_to(env, "/permissions"))[0].startswith("Permissions in force:\n- mode: default")
    assert "turned off in the configuration" in (await reply_to(env, "/sandbox"))[0]


async def test_usage_reports_what_the_session_spent(env: Env) -> None:
    env.provider.script(text("hi"))
    session = await env.manager().create(env.cwd, ())
    assert await session.prompt([TextPart("hello")]) == "end_turn"
    reply = await run_command(session, [TextPart("/usage")])
    assert reply is not None and reply.text.startswith("Model calls: 1. Tokens — input 10, output 5")


async def test_title_names_the_session_for_good(env: Env) -> None:
    from acp_hermes.core.events import TitleChanged
    from acp_hermes.core.titles import name_session

    session = await env.manager().create(env.cwd, ())
    assert (await run_command(session, [TextPart("/title")])) == CommandReply("This session has no title yet.")
    reply = await run_command(session, [TextPart("/title   Parser  rewrite. ")])
    assert reply is not None and reply.text == "The title is now “Parser rewrite”."
    record = env.runtime.db.get_session(session.id)
    assert record is not None and record.title == "Parser rewrite"
    assert [e.title for e in env.log.events if isinstance(e, TitleChanged)] == ["Parser rewrite"]
    # The automatic naming after the first exchange keeps the user's title.
    await name_session(session.state, session.services, session.wait_until_idle)
    assert session.title == "Parser rewrite" and not env.provider.auxiliary_prompts


async def test_search_finds_other_sessions_by_their_words(env: Env) -> None:
    env.provider.script(text("We picked recursive descent."), text("ok"))
    earlier = await env.manager().create(env.cwd, ())
    assert await earlier.prompt([TextPart("which parser technique for the zephyrine config?")]) == "end_turn"
    now = await env.manager().create(env.cwd, ())
    assert await now.prompt([TextPart("hello")]) == "end_turn"
    found = await run_command(now, [TextPart("/search zephyrine")])
    missing = await run_command(now, [TextPart("/search quokkaberry")])
    assert found is not None and f"`{earlier.id}`" in found.text and "zephyrine" in found.text
    assert missing is not None and missing.text.startswith("No past session mentions")
    assert not env.provider.auxiliary_prompts  # found by the index alone: no model call
