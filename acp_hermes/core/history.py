"""Keeping a conversation one the Messages API accepts, whatever interrupted it.

A process killed between a tool call and its result, an editor that quit mid-turn, a row written
by an older build: any of these can leave a ``tool_use`` with no ``tool_result`` after it, and the
API rejects every later request of that session. ``unanswered_calls`` finds the calls a stored
conversation left open (a restored session gives each a result, so replay shows it ended);
``repaired`` returns the history as it must be sent, applied to every request as the last line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

INTERRUPTED = "Interrupted before it finished: the session was stopped while this call ran, so it has no result."


def unanswered_calls(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tool_use`` blocks no ``tool_result`` in the following message answers."""
    open_calls: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        calls = [b for b in _blocks(message) if b.get("type") == "tool_use"]
        if not calls:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = _answered_ids(following) if following is not None and following.get("role") == "user" else set()
        open_calls.extend(call for call in calls if call.get("id") not in answered)
    return open_calls


def repaired(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` made valid, as a new list (a valid history comes back equal, so the request's
    bytes and its cache prefix do not change).

    Every ``tool_use`` gets a result in the next message (synthetic, marked as an error, where it
    had none), results that answer no call are dropped, tool inputs that are not objects become
    ``{}``, messages left empty are dropped, and the conversation starts with the user.
    """
    out: list[dict[str, Any]] = []
    expected: list[str] = []  # ids the previous assistant message asked for
    first_user = next((n for n, m in enumerate(messages) if m.get("role") == "user"), len(messages))
    for message in messages[first_user:]:
        role = message.get("role")
        blocks = _blocks(message)
        if role == "user":
            blocks = _answer(blocks, expected)
            expected = []
        elif role == "assistant":
            if expected:  # two assistant messages in a row: the first one's calls need results between
                out.append({"role": "user", "content": _answer([], expected)})
            blocks = [_valid_tool_use(b) for b in blocks]
            expected = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        if blocks:
            out.append({"role": role, "content": blocks})
    if expected:  # it ends with calls nobody answered
        out.append({"role": "user", "content": _answer([], expected)})
    if out and out[0]["role"] != "user":  # the first user message held only stray results: go again
        return repaired(out[1:])
    return out


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [block for block in content or [] if isinstance(block, dict)]


def _answered_ids(message: dict[str, Any]) -> set[str]:
    return {str(b.get("tool_use_id")) for b in _blocks(message) if b.get("type") == "tool_result"}


def _answer(blocks: list[dict[str, Any]], expected: list[str]) -> list[dict[str, Any]]:
    """The user message's blocks with a result for each expected call, results first, in call order."""
    results = {str(b.get("tool_use_id")): b for b in blocks if b.get("type") == "tool_result"}
    others = [b for b in blocks if b.get("type") != "tool_result"]
    if not expected and not results:
        return blocks
    answered = [results.get(call_id) or interrupted_result(call_id) for call_id in expected]
    return [*answered, *others]


def interrupted_result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": INTERRUPTED, "is_error": True}


def _valid_tool_use(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
        return {**block, "input": {}}
    return block
