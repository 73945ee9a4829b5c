"""How a hook's run is read: Claude Code's exit codes and JSON answers exactly, and nothing loosely.

The table is the contract: an answer that is not understood decides nothing (never "allow")."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from acp_hermes.config import HookEvent, Settings
from acp_hermes.core.hook_answers import read_answer
from acp_hermes.core.hook_config import Hook, HookApprovals, matcher_matches, tool_names, user_hooks
from acp_hermes.core.hook_runner import HookRun, run_hooks

HOOK = Hook("PreToolUse", "", "guard.sh", 60, "user")


def answer_of(stdout: str = "", *, exit_code: int = 0, stderr: str = "", event: HookEvent = "PreToolUse"):  # type: ignore[no-untyped-def]
    return read_answer(HookRun(HOOK, exit_code, stdout, stderr, 0.01), event)


def specific(**fields: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}})


@pytest.mark.parametrize(("stdout", "decision"), [
    (specific(permissionDecision="allow"), "allow"),
    (specific(permissionDecision="deny", permissionDecisionReason="no"), "deny"),
    (specific(permissionDecision="ask"), "ask"),
    (json.dumps({"decision": "approve"}), "allow"),
    (json.dumps({"decision": "block", "reason": "no"}), "deny"),
    ("", None),
    (json.dumps({"continue": True, "suppressOutput": True}), None),
])
def test_understood_answers(stdout: str, decision: str | None) -> None:
    answer = answer_of(stdout)
    assert answer.decision == decision and not answer.not_understood


@pytest.mark.parametrize("stdout", [
    json.dumps({"action": "approve"}),  # Hermes's bug: parsed to nothing, and the tool ran unasked
    specific(permissionDecision="yes"),
    specific(permissionDecision="allow", updatedInput="{}"),  # changing the input is not supported: not obeyed
    json.dumps({"decision": "allow"}),
    json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}}),
    json.dumps({"continue": "no"}),
    json.dumps(["allow"]),
    "allow",
])
def test_answers_not_understood_decide_nothing(stdout: str) -> None:
    answer = answer_of(stdout)
    assert answer.decision is None and answer.not_understood


def test_exit_codes() -> None:
    blocked = answer_of(exit_code=2, stderr="force pushes are off\n")
    assert blocked.decision == "deny" and blocked.reason == "force pushes are off"
    assert answer_of(exit_code=2, event="UserPromptSubmit").decision == "block"
    failed = answer_of(exit_code=1, stderr="boom")
    assert failed.decision is None and "failed (exit 1): boom" in failed.message
    timed_out = read_answer(HookRun(HOOK, None, "", "", 60, timed_out=True), "PreToolUse")
    assert timed_out.decision is None and "did not finish within 60 s" in timed_out.message


def test_plain_text_is_context_only_where_claude_code_takes_it() -> None:
    assert answer_of("branch main, 2 files changed", event="UserPromptSubmit").context.startswith("branch main")
    assert answer_of("1 file reformatted", event="PostToolUse").context == ""
    stop = answer_of(json.dumps({"continue": False, "stopReason": "enough"}), event="Stop")
    assert stop.stop == "enough"


@pytest.mark.parametrize(("matcher", "tool", "runs"), [
    ("Bash", "terminal", True), ("terminal|Bash", "terminal", True), ("Write|Edit", "patch", True),
    ("MultiEdit", "patch", True), ("Read", "read_file", True), ("Grep", "search_files", True),
    ("Glob", "search_files", True), ("Task", "delegate_task", True), ("mcp__github__.*", "mcp__github__list", True),
    ("Bash", "write_file", False), ("Write", "write_file_x", False), ("Edit", "write_file", False),
])
def test_matchers_see_our_names_and_claude_codes(matcher: str, tool: str, runs: bool) -> None:
    from acp_hermes_tools import core_tools

    declared = {t.name: t.claude_names for t in core_tools()}
    from acp_hermes.core.delegation import delegate_tool

    task = delegate_tool(lambda: None, None)  # type: ignore[arg-type]  # declared, never run here
    declared[task.name] = task.claude_names
    assert matcher_matches(matcher, tool_names(tool, declared.get(tool, ()))) is runs


def test_an_empty_or_star_matcher_matches_every_tool() -> None:
    for matcher in ("", "*"):
        assert Hook("PreToolUse", matcher, "x", 1, "user").matches(("anything",))


def test_config_in_claude_codes_shape() -> None:
    settings = Settings.model_validate({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard", "timeout": 5}]}]}})
    assert user_hooks(settings) == [Hook("PreToolUse", "Bash", "guard", 5, "user")]
    with pytest.raises(ValueError, match="not a regular expression"):
        Settings.model_validate({"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}})
    with pytest.raises(ValueError):
        Settings.model_validate({"hooks": {"BeforeEverything": []}})


def test_approvals_are_keyed_by_the_exact_command(tmp_path: Path) -> None:
    approvals = HookApprovals(tmp_path / "approvals.json")
    approvals.approve("./fmt.sh")
    assert approvals.approved("./fmt.sh") and not approvals.approved("./fmt.sh --all")
    assert (tmp_path / "approvals.json").stat().st_mode & 0o777 == 0o600


def test_hooks_run_at_once_and_a_hang_is_cut_off(tmp_path: Path) -> None:
    hang = Hook("PreToolUse", "", "sleep 3600", 0.3, "user")
    echo = Hook("PreToolUse", "", "cat; echo done >&2", 5, "user")
    runs = anyio.run(run_hooks, [hang, echo], {"a": 1}, tmp_path)
    assert runs[0].timed_out and runs[0].exit_code is None
    assert runs[1].exit_code == 0 and json.loads(runs[1].stdout) == {"a": 1} and runs[1].stderr == "done\n"


def test_hooks_that_match_together_run_at_the_same_time(tmp_path: Path) -> None:
    """Each waits for the other's mark: run one after the other, the first would time out."""
    def waits_for(mine: str, theirs: str) -> Hook:
        return Hook("PreToolUse", "", f"touch {mine}; while [ ! -e {theirs} ]; do sleep 0.01; done", 10, "user")

    runs = anyio.run(run_hooks, [waits_for("a", "b"), waits_for("b", "a")], {}, tmp_path)
    assert [run.exit_code for run in runs] == [0, 0]
