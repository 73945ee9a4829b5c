"""`/search` shows its matches for people (the matched words in bold, tool calls as one-liners, no
index markers, no JSON), and `/export` refuses a folder that does not exist instead of making it."""

from __future__ import annotations

import pytest

from acp_hermes.core.commands import run_command
from acp_hermes.core.user_prompt import TextPart
from tests.support.fake_provider import text
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio


async def test_search_renders_matches_in_bold_and_tool_calls_as_one_liners(env: Env) -> None:
    db = env.runtime.db
    db.create_session("past", cwd=str(env.cwd), model="m", mode="default", model_config={}, system_prompt="")
    db.update_session("past", title="Lexer hunt")
    db.append_message("past", "user", "where is the zephyrine lexer used? (see *notes* and `a_b`)")
    db.append_message("past", "assistant", "", tool_calls=[
        {"id": "toolu_rg", "name": "terminal", "arguments": {"command": "rg -n zephyrine src/"}}])
    session = await env.manager().create(env.cwd, ())

    reply = await run_command(session, [TextPart("/search zephyrine")])

    assert reply is not None
    assert "  > where is the **zephyrine** lexer used? (see \\*notes\\* and \\`a\\_b\\`)" in reply.text
    assert "  > ran terminal: rg -n **zephyrine** src/" in reply.text
    assert ">>>" not in reply.text and "<<<" not in reply.text and "toolu_rg" not in reply.text


async def test_export_refuses_a_folder_that_does_not_exist(env: Env) -> None:
    env.provider.script(text("Hello."))
    session = await env.manager().create(env.cwd, ())
    assert await session.prompt([TextPart("hi")]) == "end_turn"

    reply = await run_command(session, [TextPart("/export missing/dir/notes.md")])

    assert reply is not None and reply.text.startswith("Not exported: the folder")
    assert f"`{env.cwd / 'missing' / 'dir'}` does not exist" in reply.text
    assert not (env.cwd / "missing").exists() and not env.asker.questions  # nothing asked, nothing made
