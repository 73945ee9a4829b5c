"""A session's events reach the external memory provider as Hermes's hooks: each typed event, published
to the provider manager, becomes the call of that name with its arguments (a real plugin, loaded from
``$HERMES_HOME/plugins``, each call on a thread of its own; the agent's exit waits for them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_hermes.core.events import CompactionStarting, SessionEnded, TaskDelegated, TurnEnded
from acp_hermes.core.memory_providers import MemoryProviders
from acp_hermes_tools.contracts import MemoryWritten
from tests.support.wire import typed

RECORDER = '''
from acp_hermes_memory.providers import MemoryProvider

CALLS = []


class Recorder(MemoryProvider):
    name = "recorder"

    def sync_turn(self, user_content, assistant_content, *, session_id=""):
        CALLS.append(("sync_turn", (user_content, assistant_content), {"session_id": session_id}))

    def queue_prefetch(self, query, *, session_id=""):
        CALLS.append(("queue_prefetch", (query,), {"session_id": session_id}))

    def on_memory_write(self, action, target, content):
        CALLS.append(("on_memory_write", (action, target, content), {}))

    def on_pre_compress(self, messages):
        CALLS.append(("on_pre_compress", (messages,), {}))
        return ""

    def on_delegation(self, task, result, *, child_session_id="", **kwargs):
        CALLS.append(("on_delegation", (task, result), {"child_session_id": child_session_id}))

    def on_session_end(self, messages):
        CALLS.append(("on_session_end", (messages,), {}))
'''


def test_each_event_becomes_the_hook_of_its_name(tmp_path: Path) -> None:
    plugin = tmp_path / "plugins" / "recorder"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(RECORDER, encoding="utf-8")
    providers = MemoryProviders(["recorder"], home=tmp_path)
    providers.start_session("s1", tmp_path)  # waits for the plugin to load
    conversation = typed([{"role": "user", "content": "hi"}])
    as_hermes_takes_it = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]  # the API's form

    providers.publish("s1", TurnEnded("hi", "hello"))
    providers.publish("s1", MemoryWritten("add", "user", "Prefers tabs."))
    providers.publish("s1", CompactionStarting(conversation))
    providers.publish("s1", TaskDelegated("Fix the parser", "Fixed.", "child-1"))
    providers.publish("s1", SessionEnded(conversation))
    providers.shutdown()  # what still runs in the background may finish

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = sys.modules["hermes_plugins.recorder"].CALLS
    assert sorted(calls, key=lambda call: call[0]) == sorted([
        ("sync_turn", ("hi", "hello"), {"session_id": "s1"}),
        ("queue_prefetch", ("hi",), {"session_id": "s1"}),
        ("on_memory_write", ("add", "user", "Prefers tabs."), {}),
        ("on_pre_compress", (as_hermes_takes_it,), {}),
        ("on_delegation", ("Fix the parser", "Fixed."), {"child_session_id": "child-1"}),
        ("on_session_end", (as_hermes_takes_it,), {}),
    ], key=lambda call: call[0])
    assert calls.index(("sync_turn", ("hi", "hello"), {"session_id": "s1"})) < calls.index(
        ("queue_prefetch", ("hi",), {"session_id": "s1"}))  # the next recall warms up after the turn is told
