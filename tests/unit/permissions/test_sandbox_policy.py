"""The permission policy for commands in a session that has an OS sandbox, as a table.

With a sandbox the classification decides when to ask and the sandbox holds: normal commands
run unasked in accept-edits and bypass, grants cover a command only inside the sandbox, and
leaving it (network, outside writes, the agent's own request) always asks with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import CommandRequest, Grants, Surroundings, Verdict, decide

WHERE = Surroundings(home=Path("/home/dev"), hermes_home=Path("/home/dev/.hermes"),
                     roots=(Path("/home/dev/project"),))


NO_GRANTS = Grants()


def verdict(command: str, mode: Mode, *, grants: Grants = NO_GRANTS, network: bool = False,
            leave: bool = False, sandbox: bool = True) -> Verdict:
    return decide(CommandRequest(command, sandbox, network, leave), mode, grants, WHERE)


def summary(found: Verdict) -> tuple[str, bool, bool]:
    return found.outcome, found.sandboxed, found.network


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (Mode.DEFAULT, ("ask", True, False)),
        (Mode.ACCEPT_EDITS, ("allow", True, False)),
        (Mode.BYPASS, ("allow", True, False)),
    ],
)
def test_a_normal_command_runs_in_the_sandbox(mode: Mode, expected: tuple[str, bool, bool]) -> None:
    assert summary(verdict("pytest -q", mode)) == expected


def test_plan_mode_and_catastrophic_commands_are_refused_with_or_without_a_sandbox() -> None:
    assert verdict("pytest -q", Mode.PLAN).outcome == "refuse"
    assert verdict("rm -rf ~", Mode.BYPASS).outcome == "refuse"


def test_a_grant_covers_a_command_only_inside_the_sandbox() -> None:
    granted = Grants(allowed_commands=frozenset({"git status", "curl"}))
    assert summary(verdict("git status", Mode.DEFAULT, grants=granted)) == ("allow", True, False)
    leaving = verdict("git status", Mode.DEFAULT, grants=granted, leave=True)
    assert leaving.outcome == "ask" and not leaving.sandboxed and leaving.offer is None
    network = verdict("curl -sS https://example.com", Mode.DEFAULT, grants=granted)
    assert summary(network) == ("ask", True, True) and "needs the network" in network.reasons
    assert "(in the sandbox)" in (verdict("git log", Mode.DEFAULT).offer or pytest.fail()).allow_label


@pytest.mark.parametrize("mode", [Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.BYPASS])
def test_leaving_the_sandbox_always_asks_and_says_why(mode: Mode) -> None:
    network = verdict("npm ci", mode)
    assert summary(network) == ("ask", True, True) and network.offer is None
    assert "needs the network" in network.reasons
    outside = verdict("cp build/app /home/dev/bin/app", mode)
    assert summary(outside) == ("ask", False, False)
    assert "runs outside the sandbox" in outside.reasons and any("outside the workspace" in r for r in outside.reasons)
    asked = verdict("make install", mode, leave=True)
    assert summary(asked) == ("ask", False, False) and "runs outside the sandbox" in asked.reasons


def test_a_sandbox_with_the_network_allowed_does_not_ask_for_it() -> None:
    assert summary(verdict("npm ci", Mode.BYPASS, network=True)) == ("allow", True, False)


def test_dangerous_commands_still_ask_and_run_sandboxed() -> None:
    push = verdict("git push --force", Mode.BYPASS)
    assert summary(push) == ("ask", True, True) and {"force push", "needs the network"} <= set(push.reasons)
    rm = verdict("rm -rf build", Mode.BYPASS)
    assert summary(rm) == ("ask", True, False) and rm.offer is None


@pytest.mark.parametrize("mode", [Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.BYPASS])
def test_without_a_sandbox_commands_behave_as_before(mode: Mode) -> None:
    found = verdict("pytest -q", mode, sandbox=False)
    assert not found.sandboxed
    assert found.outcome == ("allow" if mode is Mode.BYPASS else "ask")
