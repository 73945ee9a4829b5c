"""The permission policy for commands in a session that has an OS sandbox, as a table.

With a sandbox the classification decides when to ask and the sandbox holds: normal commands
run unasked in accept-edits and bypass, grants given there cover a command only inside the sandbox,
and leaving it (network, outside writes, writes to what the sandbox keeps read-only, the agent's own
request) always asks with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import Grants, Verdict, decide
from acp_hermes.permissions.shell.analysis import Where, analyse
from acp_hermes_tools.contracts import Command, Surroundings

WHERE = Surroundings(home=Path("/home/dev"), hermes_home=Path("/home/dev/.hermes"),
                     roots=(Path("/home/dev/project"),))


NO_GRANTS = Grants()


def verdict(command: str, mode: Mode, *, grants: Grants = NO_GRANTS, network: bool = False,
            leave: bool = False, sandbox: bool = True, cwd: Path | None = None) -> Verdict:
    where = Surroundings(WHERE.home, WHERE.hermes_home, WHERE.roots, sandbox=sandbox, network_allowed=network)
    runs_in = cwd or WHERE.roots[0]  # where a line runs when no directory is given: the first root
    analysis = analyse(command, Where(WHERE.home, WHERE.roots, runs_in, WHERE.hermes_home))
    return decide(Command(command, runs_in, leave, analysis), mode, grants, where)


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
    offer = verdict("git log", Mode.DEFAULT).offer or pytest.fail()
    assert "(in the sandbox)" in offer.allow_label
    assert offer.keys == ("sandbox:git log",) and offer.rejected_keys == ("git log",)


def test_a_grant_given_in_the_sandbox_never_covers_a_command_without_one() -> None:
    granted = Grants(allowed_commands=frozenset({"sandbox:git log"}))
    assert summary(verdict("git log", Mode.DEFAULT, grants=granted)) == ("allow", True, False)
    assert verdict("git log", Mode.DEFAULT, grants=granted, sandbox=False).outcome == "ask"
    plain = Grants(allowed_commands=frozenset({"git log"}))
    assert verdict("git log", Mode.DEFAULT, grants=plain, sandbox=False).outcome == "allow"


@pytest.mark.parametrize("mode", [Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.BYPASS])
@pytest.mark.parametrize(("command", "cwd", "written"), [
    ("git config core.fsmonitor 'touch x'", None, "the repository's .git"),
    ("git commit -m wip", None, "the repository's .git"),
    ("echo evil > pre-commit", Path("/home/dev/project/.git/hooks"), "/home/dev/project/.git/hooks/pre-commit"),
    ("cd .git/hooks && echo evil > post-checkout", None, "/home/dev/project/.git/hooks/post-checkout"),
    ("echo 'export A=1' >> .envrc", None, "/home/dev/project/.envrc"),
    ("cp settings.json .vscode/settings.json", None, "/home/dev/project/.vscode/settings.json"),
])
def test_writing_what_runs_later_outside_asks_to_leave_the_sandbox(
    mode: Mode, command: str, cwd: Path | None, written: str
) -> None:
    found = verdict(command, mode, cwd=cwd)
    assert summary(found) == ("ask", False, False)
    assert "runs outside the sandbox" in found.reasons and any(written in reason for reason in found.reasons)
    if written != "the repository's .git" or "fsmonitor" in command:
        assert found.offer is None  # planting what runs later is never allowed for good


def test_a_plain_git_command_that_writes_the_repository_may_be_allowed_outside_for_good() -> None:
    offer = verdict("git commit -m wip", Mode.ACCEPT_EDITS).offer or pytest.fail()
    assert offer.keys == ("git commit",) and "outside the sandbox" in offer.allow_label
    granted = Grants(allowed_commands=frozenset({"git commit"}))
    assert summary(verdict("git commit -m next", Mode.DEFAULT, grants=granted)) == ("allow", False, False)
    in_the_sandbox_only = Grants(allowed_commands=frozenset({"sandbox:git commit"}))
    assert verdict("git commit -m next", Mode.DEFAULT, grants=in_the_sandbox_only).outcome == "ask"
    for never in ("git push origin main", "git commit -m x && cp a /etc/x", "HOME=. git commit -m x"):
        assert verdict(never, Mode.DEFAULT, grants=granted).offer is None, never


def test_reading_the_repository_stays_in_the_sandbox() -> None:
    for command in ("git status", "git log -3", "git diff", "git branch", "git stash list", "cat .git/HEAD"):
        assert verdict(command, Mode.ACCEPT_EDITS).sandboxed, command


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
    push = verdict("git push --force", Mode.BYPASS)  # it also updates the repository's remote branches
    assert summary(push) == ("ask", False, False) and {"force push", "runs outside the sandbox"} <= set(push.reasons)
    rm = verdict("rm -rf build", Mode.BYPASS)
    assert summary(rm) == ("ask", True, False) and rm.offer is None


@pytest.mark.parametrize("mode", [Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.BYPASS])
def test_without_a_sandbox_commands_behave_as_before(mode: Mode) -> None:
    found = verdict("pytest -q", mode, sandbox=False)
    assert not found.sandboxed
    assert found.outcome == ("allow" if mode is Mode.BYPASS else "ask")


@pytest.mark.parametrize("command", [
    "python3 -c 'import os'",
    "node -e 'require(\"fs\")'",
    "cd \"$DIR\" && make",
    "echo 'ls' | sh",
])
def test_bypass_without_a_sandbox_asks_for_what_the_analysis_cannot_see(command: str) -> None:
    found = verdict(command, Mode.BYPASS, sandbox=False)
    assert found.outcome == "ask", command
    assert verdict(command, Mode.BYPASS).outcome == "allow" or verdict(command, Mode.BYPASS).sandboxed


@pytest.mark.parametrize("command", [
    "cat <<EOF\n$(rm -rf ~)\nEOF",
    "flock /tmp/lock rm -rf ~",
    "script -qc 'rm -rf ~' /dev/null",
    "strace -f -o /dev/null rm -rf ~",
    "unshare -r rm -rf ~",
    "chroot / rm -rf ~",
    "runuser -u dev -- rm -rf ~",
    "parallel rm -rf ::: ~",
    "git rebase --exec 'rm -rf ~' main",
    "git submodule foreach 'rm -rf ~'",
    "gdb -batch -ex 'shell rm -rf ~'",
    "vim -c '!rm -rf ~' notes.txt",
    "tmux new -d 'rm -rf ~'",
    "valgrind --tool=none rm -rf ~",
    "systemd-run --user rm -rf ~",
    "echo 'rm -rf ~' | sh",
    # round three: wrappers the rules did not know, runners that hid a shell, programs without rules
    "rlwrap rm -rf ~",
    "chronic rm -rf ~",
    "proot rm -rf ~",
    "run0 rm -rf ~",
    "ifne rm -rf ~",
    "trap 'rm -rf ~' EXIT",
    "uv run bash -c 'rm -rf ~'",
    "find . -exec sh -c 'rm -rf ~' \\;",
    "ssh localhost rm -rf ~",
    "somewrapper rm -rf ~",
])
@pytest.mark.parametrize("sandbox", [True, False])
def test_catastrophic_commands_are_refused_behind_any_wrapper(command: str, sandbox: bool) -> None:
    assert verdict(command, Mode.BYPASS, sandbox=sandbox).outcome == "refuse", command


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_question_no_grant_may_answer_for_good_says_why(sandbox: bool) -> None:
    found = verdict("rg --pre ./unpack.sh TODO", Mode.DEFAULT, sandbox=sandbox)
    assert found.outcome == "ask" and found.offer is None
    assert found.reasons == ("`--pre` is not among the options of rg a remembered grant may cover",)
    assigned = verdict("HOME=. git status", Mode.DEFAULT, sandbox=sandbox)
    assert any("sets HOME" in reason for reason in assigned.reasons) and assigned.offer is None


@pytest.mark.parametrize("command", ["truncate -s0 ~/.bashrc", "unlink ~/.bashrc", "rm ~/.zshrc",
                                     "time -o ~/.profile ls"])
@pytest.mark.parametrize("sandbox", [True, False])
def test_writes_to_profiles_by_any_program_ask_in_bypass_and_are_never_granted(command: str, sandbox: bool) -> None:
    found = verdict(command, Mode.BYPASS, sandbox=sandbox)
    assert found.outcome == "ask" and found.offer is None, found
    assert any("shell profile" in reason for reason in found.reasons)


def test_bypass_without_a_sandbox_asks_before_a_program_without_rules_runs_another() -> None:
    found = verdict("./wrap.sh rm notes.txt", Mode.BYPASS, sandbox=False)
    assert found.outcome == "ask"
    assert found.reasons == ("runs what acp-hermes cannot see in full (./wrap.sh may run rm, and acp-hermes has no "
                             "rules for it)",)
    assert verdict("./wrap.sh rm notes.txt", Mode.BYPASS).outcome == "allow"  # the sandbox holds it


@pytest.mark.parametrize("command", ["git log", "pytest -k rm", "grep rm file", "echo rm", "man rm",
                                     "./manage.py test", "npm run build", "make test"])
def test_bypass_without_a_sandbox_runs_everyday_commands_unasked(command: str) -> None:
    assert verdict(command, Mode.BYPASS, sandbox=False).outcome == "allow"
