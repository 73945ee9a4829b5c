"""Bypass needs a sandbox, or the user's explicit choice: where no sandbox runs commands, a session is
not offered ``bypass``, cannot be switched to it, and one that was to start in it starts in ``default``
and says why once. ``allow_unsandboxed_bypass`` in the user's config offers it all the same."""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine
from typing import Any

import anyio
import pytest

from acp_hermes.config import load_settings
from acp_hermes.core.commands import run_command
from acp_hermes.core.errors import ModeUnavailable
from acp_hermes.core.events import Notice
from acp_hermes.core.sessions import SessionManager, SessionWiring
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.permissions.modes import Mode
from acp_hermes_tools.local_io import LocalEditor
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio
REASON = "bypass is not available without a sandbox, and commands run without one here: turned off in the " \
         "configuration (sandbox: off)."


def allow_unsandboxed_bypass(env: Env, **more: Any) -> None:
    env.runtime.settings = env.runtime.settings.model_copy(update={"allow_unsandboxed_bypass": True, **more})


@pytest.fixture
async def served(env: Env) -> AsyncIterator[SessionManager]:
    """A manager whose background work runs (the notices), as the server's does."""

    async def run(job: Coroutine[Any, Any, None]) -> None:
        await job

    async with anyio.create_task_group() as group:
        wiring = SessionWiring(sink_for=lambda sid: env.log,  # type: ignore[arg-type,return-value]
                               asker_for=lambda sid: env.asker, editor_for=lambda sid: LocalEditor())
        yield SessionManager(env.runtime, wiring, lambda job: group.start_soon(run, job))
        group.cancel_scope.cancel()


def notices(env: Env) -> list[str]:
    return [event.text or "" for event in env.log.events if isinstance(event, Notice)]


async def test_without_a_sandbox_bypass_is_not_offered_and_switching_to_it_is_refused(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())  # the test settings turn the sandbox off
    assert session.choices.modes == (Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.PLAN)
    with pytest.raises(ModeUnavailable) as refused:
        session.set_choice("mode", "bypass")
    assert str(refused.value).startswith(REASON)
    assert f"set `allow_unsandboxed_bypass: true` in {env.runtime.paths.config_file}" in str(refused.value)
    assert session.choices.mode is Mode.DEFAULT and session.services.gate.mode is Mode.DEFAULT
    session.set_choice("mode", "accept-edits")  # the other modes switch as ever
    reply = await run_command(session, [TextPart("/mode bypass")])
    assert reply is not None and reply.text.startswith("Could not change the mode: " + REASON)
    assert reply.changed_option is None and session.choices.mode is Mode.ACCEPT_EDITS
    listing = await run_command(session, [TextPart("/mode")])
    assert listing is not None and "`bypass`" not in listing.text and "Bypass is not available" in listing.text


async def test_the_users_config_may_allow_bypass_without_a_sandbox(env: Env) -> None:
    allow_unsandboxed_bypass(env)
    session = await env.manager().create(env.cwd, ())
    assert session.choices.modes == tuple(Mode) and session.choices.no_bypass == ""
    session.set_choice("mode", "bypass")
    assert session.services.gate.mode is Mode.BYPASS
    assert session.choices.describe(Mode.BYPASS)[0] == "Bypass (no sandbox)"
    assert "every command runs with your rights, unasked" in session.choices.describe(Mode.BYPASS)[1]


async def test_a_default_mode_of_bypass_starts_in_default_and_says_why_once(
    env: Env, served: SessionManager
) -> None:
    env.runtime.settings = env.runtime.settings.model_copy(update={"default_mode": Mode.BYPASS})
    new = served.create_soon(env.cwd, ())
    assert new.choices.mode is Mode.DEFAULT  # what session/new answers with
    session = await served.get(new.id)
    assert session.services.gate.mode is Mode.DEFAULT
    with anyio.fail_after(5):
        while not notices(env):
            await anyio.sleep(0)
    assert notices(env) == [f"⚠️ This session is in `default` mode, not `bypass`: {REASON}"
                            f" In bypass every command would run with your rights, unasked; to allow that anyway, "
                            f"set `allow_unsandboxed_bypass: true` in {env.runtime.paths.config_file}.\n\n"]
    await served.restore(session.id, env.cwd, ())  # opened again: said once only
    assert len(notices(env)) == 1


async def test_a_session_left_in_bypass_reopens_in_default_where_bypass_is_not_allowed(
    env: Env, served: SessionManager
) -> None:
    allow_unsandboxed_bypass(env)
    left = await env.manager().create(env.cwd, ())
    left.set_choice("mode", "bypass")
    env.runtime.settings = env.runtime.settings.model_copy(update={"allow_unsandboxed_bypass": False})
    reopened, _ = await served.restore(left.id, env.cwd, ())  # a fresh manager: built from the stored row
    assert reopened is not left and reopened.choices.mode is Mode.DEFAULT
    assert reopened.services.gate.mode is Mode.DEFAULT
    with anyio.fail_after(5):
        while not notices(env):
            await anyio.sleep(0)
    assert "not `bypass`" in notices(env)[0]


async def test_a_childs_choices_follow_the_same_rule(env: Env) -> None:
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.permissions.gate import SessionGrants

    manager = env.manager()
    parent = await manager.create(env.cwd, ())
    spec = SubagentSpec(1, "A task", frozenset({"read_file"}), 5, SessionGrants())
    child = await manager.create_child(parent, "child-1", spec, env.log, env.asker)  # type: ignore[arg-type]
    assert child.choices.no_bypass == parent.choices.no_bypass != ""
    with pytest.raises(ModeUnavailable):
        child.set_choice("mode", "bypass")


def test_only_the_users_own_config_file_allows_it(tmp_path: Any) -> None:
    from acp_hermes.config import ConfigError, Paths

    paths = Paths(tmp_path)
    sneaky = {"ALLOW_UNSANDBOXED_BYPASS": "true", "ACP_HERMES_ALLOW_UNSANDBOXED_BYPASS": "1",
              "HERMES_ALLOW_UNSANDBOXED_BYPASS": "true"}
    assert load_settings(env=sneaky, paths=paths).allow_unsandboxed_bypass is False
    paths.config_file.parent.mkdir(parents=True)
    paths.config_file.write_text("allow_unsandboxed_bypass: true\n")
    assert load_settings(env={}, paths=paths).allow_unsandboxed_bypass is True
    paths.config_file.write_text("allow_unsandboxed_bypass: 'yes please'\n")  # a choice, not a string
    with pytest.raises(ConfigError, match="allow_unsandboxed_bypass"):
        load_settings(env={}, paths=paths)
