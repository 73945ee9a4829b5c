"""`acp-hermes hooks list|test`: the hooks a session started here would run, and what each answers.

``list`` shows every hook — the user's and the project's — with its event, matcher, timeout, where it
comes from and, for a project's, whether the workspace is trusted and the command approved. ``test``
runs the hooks an event would run (those a session would run: a project's only where trusted and
approved) on a sample, and prints each answer as acp-hermes reads it, so a hook whose answer is not
understood is seen before it matters. ``doctor_problems`` is for ``doctor``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from acp_hermes.app.local_settings import settings_or_defaults
from acp_hermes.config import HOOK_EVENTS, Paths, Settings, paths_from_env, trust_from_env
from acp_hermes.core.hook_config import (
    Hook,
    HookApprovals,
    known_event,
    not_understood_answers,
    project_hooks,
    user_hooks,
)


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `hooks` command and its subcommands (``commands`` is the top-level subparsers object)."""
    hooks = commands.add_parser("hooks", parents=[common], help="list the hooks, or try them on a sample event")
    actions = hooks.add_subparsers(dest="action", metavar="action", required=True)
    actions.add_parser("list", parents=[common], help="every hook, where it comes from, approved or not")
    test = actions.add_parser("test", parents=[common],
                              help="run the hooks of an event on a sample and print their answers as read")
    test.add_argument("event", help=f"one of {', '.join(HOOK_EVENTS)}")
    test.add_argument("--tool", help="the tool's name, ours or Claude Code's (PreToolUse, PostToolUse)")
    test.add_argument("--input", default="{}", help="the tool's input as a JSON object")
    test.add_argument("--prompt", default="hello", help="the prompt (UserPromptSubmit)")


def run_hooks_command(args: argparse.Namespace) -> int:
    paths = paths_from_env()
    settings = settings_or_defaults(paths)
    cwd = Path.cwd()
    if args.action == "list":
        return _list(paths, settings, cwd)
    return _test(paths, settings, cwd, args)


def _trusted(paths: Paths, settings: Settings, cwd: Path) -> bool:
    """Whether a session opened in ``cwd`` would find it trusted, so its project hooks would load (``core.trust``)."""
    from acp_hermes.core.runtime import Runtime
    from acp_hermes.core.trust import open_trust

    try:
        return open_trust(Runtime(settings, paths, trust_everything=trust_from_env()), cwd).trusted
    except OSError:  # the decisions cannot be read (HERMES_HOME unusable: doctor says so once): not trusted
        return False


def _approvals(paths: Paths) -> HookApprovals:
    return HookApprovals(paths.own / "hook_approvals.json")


def _list(paths: Paths, settings: Settings, cwd: Path) -> int:
    from acp_hermes.core.hooks import describe

    mine = user_hooks(settings)
    project, problem = project_hooks(cwd)
    if not mine and not project and problem is None:
        print(f"No hooks. Add them under `hooks:` in {paths.config_file} (see docs/hooks.md).")
        return 0
    if mine:
        print(f"Your hooks ({paths.config_file})")
        print("".join(f"  {line}\n" for line in describe(mine, _approvals(paths))), end="")
    if project or problem:
        trusted = _trusted(paths, settings, cwd)
        state = "trusted: they run once each command is approved" if trusted else "not trusted: they do not run"
        print(f"Project hooks ({cwd / '.hermes' / 'config.yaml'}; this workspace is {state})")
        print("".join(f"  {line}\n" for line in describe(project, _approvals(paths))), end="")
        if problem:
            print(f"  not loaded: {problem}")
    return 0


def _test(paths: Paths, settings: Settings, cwd: Path, args: argparse.Namespace) -> int:
    import anyio

    from acp_hermes.core.hook_answers import read_answer
    from acp_hermes.core.hook_config import TOOL_EVENTS
    from acp_hermes.core.hook_runner import run_hooks

    event = known_event(args.event)
    if event is None:
        print(f"acp-hermes: no hook event {args.event!r}; the events are {', '.join(HOOK_EVENTS)}", file=sys.stderr)
        return 1
    try:
        tool_input = json.loads(args.input)
    except ValueError as error:
        print(f"acp-hermes: --input is not JSON: {error}", file=sys.stderr)
        return 1
    if not isinstance(tool_input, dict):
        print("acp-hermes: --input must be a JSON object", file=sys.stderr)
        return 1
    names = _names(args.tool) if args.tool else None
    hooks, skipped = _runnable(paths, settings, cwd)
    chosen = [hook for hook in hooks if hook.event == event and hook.matches(names if event in TOOL_EVENTS else None)]
    for line in skipped:
        print(line)
    if not chosen:
        print(f"No hook runs for {event}{f' on {args.tool}' if args.tool else ''}.")
        return 0
    payload: dict[str, Any] = {"session_id": "hooks-test", "transcript_path": "", "cwd": str(cwd),
                               "hook_event_name": event}
    if event in TOOL_EVENTS:
        names = names or ("Bash",)  # a sample with no tool named: a shell command, as most guards expect
        payload.update(tool_name=names[1] if len(names) > 1 else names[0], tool_input=tool_input,
                       hermes_tool_name=names[0], tool_use_id="toolu_hooks_test")
        if event == "PostToolUse":
            payload["tool_response"] = {"success": True, "output": ""}
    elif event == "UserPromptSubmit":
        payload["prompt"] = args.prompt
    elif event in ("Stop", "SubagentStop"):
        payload["stop_hook_active"] = False
    runs = anyio.run(run_hooks, chosen, payload, cwd)
    for run in runs:
        answer = read_answer(run, event)
        status = "timed out" if run.timed_out else f"exit {run.exit_code}"
        print(f"{run.hook.name} ({run.hook.source}; {status}; {run.seconds * 1000:.0f} ms): {answer.outcome}")
    return 0


def _names(name: str) -> tuple[str, ...]:
    """A tool's names, ours then Claude Code's, whichever of them ``name`` is (the built-in tools declare theirs)."""
    from acp_hermes.core.hook_config import tool_names
    from acp_hermes_tools import core_tools

    tool = next((tool for tool in core_tools() if name == tool.name or name in tool.claude_names), None)
    return tool_names(tool.name, tool.claude_names) if tool is not None else (name,)


def _runnable(paths: Paths, settings: Settings, cwd: Path) -> tuple[list[Hook], list[str]]:
    """What a session here would run: the user's hooks, and the project's where trusted and approved."""
    hooks = user_hooks(settings)
    skipped: list[str] = []
    project, _ = project_hooks(cwd)
    if project and not _trusted(paths, settings, cwd):
        skipped.append(f"Not run: {len(project)} project hook(s) (this workspace is not trusted).")
    elif project:
        approvals = _approvals(paths)
        for hook in project:
            if approvals.approved(hook.command):
                hooks.append(hook)
            else:
                skipped.append(f"Not run: the project's hook `{hook.name}` (not approved yet).")
    return hooks, skipped


def doctor_problems(paths: Paths, settings: Settings, cwd: Path) -> list[str]:
    """Hooks whose command cannot be found, and answers a session could not understand (recorded as they came)."""
    problems = []
    hooks = user_hooks(settings) + (project_hooks(cwd)[0] if _trusted(paths, settings, cwd) else [])
    for hook in hooks:
        program = _program(hook.command)
        if program is not None and not _found(program, cwd):
            problems.append(f"hook {hook.event} `{hook.name}`: its command `{program}` is not found")
    known = {hook.command for hook in hooks}
    for command, said in not_understood_answers(paths.own).items():
        if command in known:
            problems.append(f"hook `{Hook('PreToolUse', '', command, 0, 'user').name}` {said}, which acp-hermes "
                            "cannot understand (it decides nothing; see docs/hooks.md)")
    return problems


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    words = [word for word in words if "=" not in word.partition("/")[0]]  # VAR=value before the program
    return words[0] if words else None


def _found(program: str, cwd: Path) -> bool:
    expanded = os.path.expandvars(os.path.expanduser(program))
    if "/" in expanded:
        path = Path(expanded) if Path(expanded).is_absolute() else cwd / expanded
        return path.exists()
    return shutil.which(expanded) is not None or expanded in _SHELL_WORDS


_SHELL_WORDS = frozenset({"echo", "exit", "true", "false", "test", "[", "cd", "printf", "read", "exec", "set", "if",
                          "for", "while", "case", "export", ":"})
