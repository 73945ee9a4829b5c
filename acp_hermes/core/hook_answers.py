"""What a hook's run says, read exactly as Claude Code defines it — and nothing read loosely.

Exit 0 goes on (its stdout may be a JSON answer), exit 2 blocks with stderr as the reason, any other
exit is an error the user is shown and the action goes on. An answer is understood only when every key
and value in it is one this module knows; anything else (``{"action": "approve"}``, a decision of
``"yes"``, text where JSON was expected) is *not understood*: it decides nothing — the usual gate
decides — and the user is told what the hook said. So a hook can only loosen a rule by saying so in
words read exactly.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from acp_hermes.config import HookEvent
from acp_hermes.core.hook_config import Hook
from acp_hermes.core.hook_runner import HookRun
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

Decision = Literal["allow", "deny", "ask", "block"]
BLOCKING_EXIT = 2
_TOP_KEYS = frozenset({"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason",
                       "hookSpecificOutput"})
_SPECIFIC_KEYS = frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason", "additionalContext"})
_CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart", "PostToolUse"})
_TEXT_IS_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})  # plain stdout is context there


@value
class HookAnswer:
    """One hook's answer as understood: a decision with its reason, a request to stop, context for the
    model, a message for the user, and what could not be understood (which decides nothing)."""

    hook: Hook
    seconds: float
    decision: Decision | None = None
    reason: str = ""
    stop: str | None = None  # ``continue: false``: why the agent should stop ("" when no reason given)
    context: str = ""
    message: str = ""  # for the user: an error, a timeout, a ``systemMessage``
    not_understood: str = ""  # what the hook said that is not a known answer

    @property
    def outcome(self) -> str:
        """One line for the log and ``hooks test``."""
        parts = [f"decision {self.decision}" if self.decision else "no decision"]
        if self.reason:
            parts.append(f"reason {self.reason!r}")
        if self.stop is not None:
            parts.append(f"stop ({self.stop or 'no reason'})")
        if self.context:
            parts.append(f"context {one_line(self.context, 80)!r}")
        if self.message:
            parts.append(f"message {self.message!r}")
        if self.not_understood:
            parts.append(f"NOT UNDERSTOOD: {self.not_understood}")
        return "; ".join(parts)


def read_answer(run: HookRun, event: HookEvent) -> HookAnswer:
    hook, seconds = run.hook, run.seconds
    if run.start_failure is not None:
        return HookAnswer(hook, seconds, message=f"Hook `{hook.name}` could not start: {run.start_failure}")
    if run.timed_out:
        return HookAnswer(hook, seconds, message=f"Hook `{hook.name}` did not finish within {hook.timeout:g} s "
                                                 "and was stopped; acp-hermes went on without it.")
    if run.exit_code == BLOCKING_EXIT:
        reason = run.stderr.strip() or f"blocked by the hook `{hook.name}`"
        return HookAnswer(hook, seconds, decision="deny" if event == "PreToolUse" else "block", reason=reason)
    if run.exit_code != 0:
        said = one_line(run.stderr.strip() or run.stdout.strip(), 300) or "no output"
        return HookAnswer(hook, seconds, message=f"Hook `{hook.name}` failed (exit {run.exit_code}): {said}")
    text = run.stdout.strip()
    if not text:
        return HookAnswer(hook, seconds)
    try:
        answer = json.loads(text)
    except ValueError:
        if event in _TEXT_IS_CONTEXT:
            return HookAnswer(hook, seconds, context=text)
        if event == "PreToolUse":  # there, printed words may be a decision meant: said, never obeyed
            return HookAnswer(hook, seconds, not_understood=f"printed {one_line(text, 200)!r}, which is not JSON")
        return HookAnswer(hook, seconds)  # a formatter's "1 file reformatted": output, not an answer
    return _read_json(hook, seconds, event, answer)


def _read_json(hook: Hook, seconds: float, event: HookEvent, answer: Any) -> HookAnswer:
    def not_understood(why: str) -> HookAnswer:
        return HookAnswer(hook, seconds, not_understood=f"answered {one_line(json.dumps(answer), 200)} ({why})")

    if not isinstance(answer, dict):
        return not_understood("not a JSON object")
    unknown = sorted(set(answer) - _TOP_KEYS)
    if unknown:
        return not_understood(f"unknown key {', '.join(map(repr, unknown))}")
    specific = answer.get("hookSpecificOutput", {})
    if not isinstance(specific, dict):
        return not_understood("hookSpecificOutput is not an object")
    unknown = sorted(set(specific) - _SPECIFIC_KEYS)
    if unknown:
        return not_understood(f"unknown key {', '.join(map(repr, unknown))} in hookSpecificOutput")
    strings = {key: value for key, value in (*answer.items(), *specific.items())
               if key not in ("continue", "suppressOutput", "hookSpecificOutput")}
    if any(not isinstance(value, str) for value in strings.values()):
        return not_understood("a value that should be text is not")
    if any(not isinstance(answer.get(key, False), bool) for key in ("continue", "suppressOutput")):
        return not_understood("continue and suppressOutput are true or false")
    if specific.get("hookEventName", event) != event:
        return not_understood(f"an answer for {specific['hookEventName']}, not {event}")
    decision: Decision | None = None
    reason = answer.get("reason", "")
    permission = specific.get("permissionDecision")
    if permission is not None:
        if event != "PreToolUse" or permission not in ("allow", "deny", "ask"):
            return not_understood(f"permissionDecision {permission!r}")
        decision, reason = permission, specific.get("permissionDecisionReason", reason)
    elif "decision" in answer:
        legacy = {"approve": "allow", "block": "deny"} if event == "PreToolUse" else {"block": "block"}
        if answer["decision"] not in legacy:
            return not_understood(f"decision {answer['decision']!r}")
        decision = "allow" if legacy[answer["decision"]] == "allow" else ("deny" if event == "PreToolUse" else "block")
    context = specific.get("additionalContext", "")
    if context and event not in _CONTEXT_EVENTS:
        return not_understood(f"additionalContext, which {event} does not take")
    stop = answer.get("stopReason", "") if answer.get("continue", True) is False else None
    return HookAnswer(hook, seconds, decision=decision, reason=reason, stop=stop, context=context,
                      message=answer.get("systemMessage", ""))
