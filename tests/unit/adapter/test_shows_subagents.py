"""Which clients see a parent's children as sessions of their own (``subagent_update``): those whose
raw ``initialize`` capabilities say so, as ACP's unstable ``subagents`` or as JetBrains AIR's
``nativeSubagentSessions``; everyone else follows them on the delegate card."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.client import AIR_NATIVE_SUBAGENTS, shows_subagents


def air(version: Any, *capabilities: Any) -> dict[str, Any]:
    return {"_meta": {"jetbrains": {"air": {"version": version, "capabilities": list(capabilities)}}}}


@pytest.mark.parametrize("capabilities", [
    {"subagents": {}},
    {"subagents": {"_meta": {"x": 1}}, "fs": {"readTextFile": True}},
    air(1, AIR_NATIVE_SUBAGENTS),
    air(2, "asyncTasks", AIR_NATIVE_SUBAGENTS),
    air(1.0, AIR_NATIVE_SUBAGENTS),  # a whole number, as claude-agent-acp's check takes it
    {"subagents": None, **air(1, AIR_NATIVE_SUBAGENTS)},
], ids=["subagents", "subagents-with-meta", "air", "air-v2", "air-version-1.0", "air-beside-null-subagents"])
def test_a_client_that_asks_for_child_sessions_gets_them(capabilities: dict[str, Any]) -> None:
    assert shows_subagents(capabilities)


@pytest.mark.parametrize("capabilities", [
    None, [], "subagents", {}, {"subagents": None}, {"subagents": True}, {"subagents": []},
    air(1, "sessionFailure", "asyncTasks"),  # AIR, but not this rendering
    air(0, AIR_NATIVE_SUBAGENTS), air(True, AIR_NATIVE_SUBAGENTS), air("1", AIR_NATIVE_SUBAGENTS),
    air(1.5, AIR_NATIVE_SUBAGENTS), air(float("nan"), AIR_NATIVE_SUBAGENTS), air(None, AIR_NATIVE_SUBAGENTS),
    {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": AIR_NATIVE_SUBAGENTS}}}},  # not a list
    {"_meta": {"jetbrains": {"air": [1]}}}, {"_meta": {"jetbrains": None}}, {"_meta": "air"},
    {"_meta": {"air": {"version": 1, "capabilities": [AIR_NATIVE_SUBAGENTS]}}},  # outside the jetbrains namespace
    {"nativeSubagentSessions": True},
], ids=repr)
def test_any_other_client_keeps_the_card(capabilities: Any) -> None:
    assert not shows_subagents(capabilities)
