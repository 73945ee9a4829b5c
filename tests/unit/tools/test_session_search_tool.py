"""The session_search tool on its own: declaration, titles, dispatch against a real SessionDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_hermes_memory.session_db import SessionDB
from acp_hermes_tools import core_tools
from acp_hermes_tools.contracts import ToolServices
from acp_hermes_tools.registry import Access, ToolCall, ToolRegistry
from acp_hermes_tools.session_search import SESSION_SEARCH_TOOL, search_title
from tests.support.tools import make_context


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(tmp_path / "state.db") as database:
        yield database


def test_declaration_and_titles() -> None:
    tool = SESSION_SEARCH_TOOL
    assert (tool.name, tool.kind, tool.access, tool.parallel_safe) == ("session_search", "search", Access.READ, True)
    assert set(tool.schema["properties"]) == {"query", "limit", "role_filter", "sort"}
    assert tool.schema.get("required", []) == []
    names = [t.name for t in core_tools()]
    assert names.index("session_search") == names.index("memory") + 1
    assert search_title("  postgres   migration ") == 'Search past sessions: "postgres migration"'
    assert search_title("") == search_title(None) == "Recent sessions"
    assert search_title("x" * 200).endswith('…"') and len(search_title("x" * 200)) < 90


@pytest.mark.anyio
async def test_dispatch_without_a_provider_falls_back_and_reports_bad_roles(db: SessionDB, tmp_path: Path) -> None:
    db.create_session("past", cwd="/work/app", model="m", mode="default", model_config={}, system_prompt="")
    db.append_message("past", "user", "The webpack build ran out of memory.")
    registry = ToolRegistry([SESSION_SEARCH_TOOL])
    ctx = make_context(tmp_path, services=ToolServices(sessions=db))

    found = await registry.dispatch(ToolCall("c1", "session_search", {"query": "webpack"}), ctx)
    assert found.ok
    assert "session past" in found.text and "(No summary: no summarizer available" in found.text
    assert ">>>webpack<<<" in found.text
    assert found.raw_output == {"query": "webpack", "sessions": [{"sessionId": "past", "title": None,
                                                                  "summarized": False}]}

    bad = await registry.dispatch(ToolCall("c2", "session_search", {"query": "webpack", "role_filter": "system"}), ctx)
    assert not bad.ok and "unknown role(s) system" in bad.text

    wrong_sort = await registry.dispatch(ToolCall("c3", "session_search", {"sort": "random"}), ctx)
    assert not wrong_sort.ok and "invalid arguments" in wrong_sort.text

    missing = await registry.dispatch(ToolCall("c4", "session_search", {}), make_context(tmp_path))
    assert not missing.ok and "not available" in missing.text


@pytest.mark.anyio
async def test_a_subagent_session_is_found_from_its_parent_and_marked(db: SessionDB, tmp_path: Path) -> None:
    db.create_session("parent-0123456789", cwd="/work/app", model="m", mode="default", model_config={},
                      system_prompt="", title="Parser refactor")
    db.append_message("parent-0123456789", "user", "Split the parser work; find the lexer bug.")
    db.create_session("child", cwd="/work/app", model="m", mode="default", model_config={}, system_prompt="",
                      parent_session_id="parent-0123456789", source="subagent", title="Find the lexer bug")
    db.append_message("child", "assistant", "The lexer drops the last zephyrine token.")
    db.create_session("fork", cwd="/work/app", model="m", mode="default", model_config={}, system_prompt="",
                      parent_session_id="parent-0123456789", title="Parser refactor (fork)")
    db.append_message("fork", "assistant", "A forked zephyrine note.")
    registry = ToolRegistry([SESSION_SEARCH_TOOL])
    from_parent = make_context(tmp_path, services=ToolServices(sessions=db), session_id="parent-0123456789")

    found = await registry.dispatch(ToolCall("c1", "session_search", {"query": "zephyrine"}), from_parent)
    assert found.ok
    assert "Find the lexer bug (subagent of parent-0) — " in found.text and "session child" in found.text
    assert "session fork" not in found.text  # a fork's conversation is the parent's own: still left out
    assert found.raw_output["sessions"] == [
        {"sessionId": "child", "title": "Find the lexer bug (subagent of parent-0)", "summarized": False}]

    from_child = make_context(tmp_path, services=ToolServices(sessions=db), session_id="child")
    parent = await registry.dispatch(ToolCall("c2", "session_search", {"query": "lexer"}), from_child)
    assert "Parser refactor — " in parent.text and "session parent-0123456789" in parent.text
    assert "session child" not in parent.text and "subagent of" not in parent.text

    anyone = make_context(tmp_path, services=ToolServices(sessions=db))
    recent = await registry.dispatch(ToolCall("c3", "session_search", {}), anyone)
    assert "Parser refactor" in recent.text and "session child" not in recent.text  # recent: conversations only
