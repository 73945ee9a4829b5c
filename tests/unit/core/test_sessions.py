"""The session manager as the front door: sessions built complete, off the event loop, and ready
before any request on them runs; one entry point that decides what a prompt is; child sessions made
by the same call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

import anyio
import pytest

from acp_hermes.core.commands import Handled, handle
from acp_hermes.core.errors import SessionCreationFailed, SessionNotFoundError
from acp_hermes.core.events import AgentText
from acp_hermes.core.session import Session
from acp_hermes.core.sessions import SessionLinks, SessionManager, SessionWiring
from acp_hermes.core.transcript import StoredPrompt, StoredReply, stored_messages
from acp_hermes.core.user_prompt import TextPart
from acp_hermes_memory.session_db import MessageRecord
from acp_hermes_tools.local_io import LocalEditor
from tests.support.fake_provider import text
from tests.support.sessions import Env
from tests.support.tools import EventLog

pytestmark = pytest.mark.anyio


class Client:
    """A client's side of the wiring: which sessions it was told opened, in order."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.opened: list[str] = []
        self.shown: list[tuple[str, int]] = []  # (session id, rows) of each replay

    def wiring(self) -> SessionWiring:
        return SessionWiring(
            sink_for=lambda sid: self.env.log,  # type: ignore[arg-type,return-value]
            asker_for=lambda sid: self.env.asker,
            editor_for=lambda sid: LocalEditor(),
            opened=lambda session: self.opened.append(session.id),
        )

    async def show(self, session: Session, rows: Sequence[MessageRecord]) -> None:
        assert session.id not in self.opened  # shown before the client is told it is open
        self.shown.append((session.id, len(rows)))


@pytest.fixture
async def served(env: Env) -> AsyncIterator[tuple[SessionManager, Client]]:
    """A manager whose background work runs, as the server's does."""
    client = Client(env)

    async def run(job: Coroutine[Any, Any, None]) -> None:
        await job

    async with anyio.create_task_group() as group:

        def spawn(job: Coroutine[Any, Any, None]) -> None:
            group.start_soon(run, job)

        yield SessionManager(env.runtime, client.wiring(), spawn), client
        group.cancel_scope.cancel()


async def test_create_soon_answers_at_once_and_requests_wait_until_the_session_is_ready(
    env: Env, served: tuple[SessionManager, Client]
) -> None:
    manager, client = served
    new = manager.create_soon(env.cwd, ())
    assert new.choices == manager.new_choices()
    assert manager.live() == [] and env.runtime.db.get_session(new.id) is None  # nothing built yet
    session = await manager.get(new.id)  # waits for the build
    assert session.id == new.id and client.opened == [new.id]
    record = env.runtime.db.get_session(new.id)
    assert record is not None and record.system_prompt == session.state.system_prompt != ""


async def test_a_session_that_could_not_be_made_is_reported_to_whoever_asks_for_it(
    env: Env, served: tuple[SessionManager, Client]
) -> None:
    manager, client = served
    new = manager.create_soon(env.cwd, ())
    # Before the build runs, another row takes the id: storing the new session fails.
    env.runtime.db.create_session(new.id, cwd=None, model=None, mode=None, model_config={}, system_prompt=None)
    with pytest.raises(SessionCreationFailed) as caught:
        await manager.get(new.id)
    assert caught.value.session_id == new.id and "SessionExists" in caught.value.details
    assert client.opened == []
    with pytest.raises(SessionNotFoundError):
        await manager.get("no-such-session")


async def test_a_session_built_after_the_client_went_away_is_closed(
    env: Env, served: tuple[SessionManager, Client]
) -> None:
    manager, client = served
    new = manager.create_soon(env.cwd, ())
    assert manager.close_all() == []
    with anyio.fail_after(5):
        await manager.wait_built()
    session = await manager.get(new.id)
    assert manager.live() == [session] and session.closed and client.opened == []
    assert env.runtime.db.get_session(new.id) is not None  # stored whole all the same
    assert await session.prompt([TextPart("anyone?")]) == "cancelled"


async def test_restore_shows_the_history_before_the_session_opens(env: Env) -> None:
    env.provider.script(text("hello"))
    session = await env.manager().create(env.cwd, ())
    assert await session.prompt([TextPart("hi")]) == "end_turn"

    client = Client(env)
    manager = SessionManager(env.runtime, client.wiring(), lambda job: job.close())
    restored, rows = await manager.restore(session.id, env.cwd, (), show=client.show)
    assert restored is not session and client.shown == [(session.id, 2)] and client.opened == [session.id]
    client.opened.clear()
    live, live_rows = await manager.restore(session.id, env.cwd, (), show=client.show)  # live: rows read to show
    assert live is restored and len(live_rows) == len(rows) == 2 and client.opened == [session.id]
    resumed, no_rows = await manager.restore(session.id, env.cwd, ())
    assert resumed is restored and no_rows == ()
    with pytest.raises(SessionNotFoundError):
        await manager.restore("no-such-session", env.cwd, ())


async def test_a_child_session_is_made_by_the_same_call_with_its_own_sink(env: Env) -> None:
    client = Client(env)
    manager = SessionManager(env.runtime, client.wiring(), lambda job: job.close())
    parent = await manager.create(env.cwd, ())
    child_log = EventLog()
    child = await manager.create(env.cwd, (), parent_id=parent.id,
                                 links=SessionLinks(sink=child_log, asker=env.asker, editor=LocalEditor()))  # type: ignore[arg-type]
    assert child.id != parent.id and child.state.parent_id == parent.id and parent.state.parent_id is None
    record = env.runtime.db.get_session(child.id)
    assert record is not None and record.parent_session_id == parent.id
    assert client.opened == [parent.id]  # the client is not told about the child
    assert await manager.get(child.id) is child

    env.provider.script(text("from the child"))
    assert await child.prompt([TextPart("work")]) == "end_turn"
    assert [e.text for e in child_log.events if isinstance(e, AgentText)] == ["from the child"]
    assert not [e for e in env.log.events if isinstance(e, AgentText)]  # nothing reached the parent's sink


async def test_handle_decides_what_a_prompt_is(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    env.provider.script(text("an answer"))
    assert await handle(session, [TextPart("/nonsense is just text")]) == Handled("end_turn")
    assert "/nonsense is just text" in str(env.provider.requests[-1].messages[-1])

    changed = await handle(session, [TextPart("/mode plan")])
    assert changed.stop_reason == "end_turn" and changed.reply is not None
    assert (changed.reply.text, changed.reply.changed_option) == ("The mode is now `plan`.", "mode")
    assert len(env.provider.requests) == 1  # a command is answered here
    stored = list(stored_messages(env.runtime.db.messages(session.id)))[-2:]
    assert isinstance(stored[0], StoredPrompt) and stored[0].parts == (TextPart("/mode plan"),)
    assert isinstance(stored[1], StoredReply) and stored[1].message_id == changed.message_id

    skill = env.runtime.paths.skills / "deploy-docs"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy-docs\ndescription: Publish the docs.\n---\n"
                                    "Run make docs, then upload.\n")
    env.provider.script(text("deploying"))
    assert await handle(session, [TextPart("/deploy-docs for 2.0")]) == Handled("end_turn")
    sent = str(env.provider.requests[-1].messages[-1])
    assert "Run make docs, then upload." in sent and "for 2.0" in sent


async def test_a_session_is_complete_when_built(env: Env) -> None:
    jobs: list[str] = []

    def spawn(job: Coroutine[Any, Any, None]) -> None:
        jobs.append(getattr(job, "__name__", ""))
        job.close()

    session = await env.manager(spawn=spawn).create(env.cwd, ())
    env.provider.script(text("one"), text("two"))
    assert await session.prompt([TextPart("first")]) == "end_turn"
    assert await session.prompt([TextPart("second")]) == "end_turn"
    # The skills' upkeep beside it as it opens; named once, after its first exchange, by the work it was built with.
    assert jobs == ["after_open", "name_session"]


async def test_a_subagents_session_is_not_opened_on_its_own(env: Env) -> None:
    """Its limits (no questions, no memory, its toolsets) live with its parent's delegation: loaded
    alone it would run with every tool under a prompt that says it cannot ask the user."""
    from acp_hermes.core.errors import InvalidInput
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.permissions.gate import SessionGrants

    manager = env.manager()
    parent = await manager.create(env.cwd, ())
    spec = SubagentSpec(1, "Find the bug", frozenset({"read_file"}), 5, SessionGrants())
    child = await manager.create_child(parent, "child-1", spec, EventLog(), env.asker)  # type: ignore[arg-type]
    assert child.subagent is spec and child.services.registry.names == ["read_file"]
    with pytest.raises(InvalidInput, match="subagent"):
        await handle(child, [TextPart("a prompt of the client's own")])
    await manager.end_child(child.id)
    with pytest.raises(InvalidInput, match="load its parent"):
        await SessionManager(env.runtime, Client(env).wiring(), lambda job: job.close()).restore(child.id, env.cwd, ())


async def test_the_manager_keeps_a_parents_running_children_so_its_cancel_and_mode_reach_them(env: Env) -> None:
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.permissions.gate import SessionGrants

    manager = env.manager()
    parent = await manager.create(env.cwd, ())
    other = await manager.create(env.cwd, ())
    spec = SubagentSpec(1, "Find the bug", frozenset({"read_file"}), 5, SessionGrants())
    first = await manager.create_child(parent, "child-1", spec, EventLog(), env.asker)  # type: ignore[arg-type]
    second = await manager.create_child(parent, "child-2", spec, EventLog(), env.asker)  # type: ignore[arg-type]
    assert list(manager.children_of(parent.id)) == [first, second] and list(manager.children_of(other.id)) == []

    parent.set_choice("mode", "plan")
    parent.cancel()
    assert (first.choices.mode.value, second.choices.mode.value) == ("plan", "plan")
    assert (first.cancel_epoch, second.cancel_epoch, other.cancel_epoch) == (1, 1, 0)

    await manager.end_child("child-1")
    assert list(manager.children_of(parent.id)) == [second] and first.closed and not second.closed
    await manager.end_child("child-2")  # closed: its own cancel
    parent.cancel()
    assert list(manager.children_of(parent.id)) == [] and second.cancel_epoch == 2  # ended: not reached again
