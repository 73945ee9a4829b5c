"""Keeping a conversation one the Messages API accepts, whatever interrupted it.

A process killed between a tool call and its result, an editor that quit mid-turn, a row written
by an older build: any of these can leave a tool call with no result after it, and the API rejects
every later request of that session. ``unanswered_calls`` finds the calls a stored conversation left
open (a restored session gives each a result, so replay shows it ended); ``repaired`` returns the
history as it must be sent, applied to every request as the last line.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_hermes.model.messages import Block, Message, ToolResult, ToolUse

INTERRUPTED = "Interrupted before it finished: the session was stopped while this call ran, so it has no result."


def unanswered_calls(messages: Sequence[Message]) -> list[ToolUse]:
    """The tool calls no result in the following message answers."""
    open_calls: list[ToolUse] = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        calls = message.calls()
        if not calls:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = ({result.tool_use_id for result in following.results()}
                    if following is not None and following.role == "user" else set())
        open_calls.extend(call for call in calls if call.id not in answered)
    return open_calls


def repaired(messages: Sequence[Message]) -> list[Message]:
    """``messages`` made valid, as a new list (a valid history comes back with the same messages, so the
    request's bytes and its cache prefix do not change).

    Every tool call gets a result in the next message (synthetic, marked as an error, where it had
    none), results that answer no call are dropped, messages left empty are dropped, and the
    conversation starts with the user. (A tool input that is not an object is made ``{}`` as it is
    read: ``model.provider.block_from_wire``.)
    """
    out: list[Message] = []
    expected: list[str] = []  # ids the previous assistant message asked for
    first_user = next((n for n, m in enumerate(messages) if m.role == "user"), len(messages))
    for message in messages[first_user:]:
        blocks = message.blocks
        if message.role == "user":
            blocks = _answer(blocks, expected)
            expected = []
        elif message.role == "assistant":
            if expected:  # two assistant messages in a row: the first one's calls need results between
                out.append(Message("user", _answer((), expected)))
            expected = [call.id for call in message.calls()]
        if blocks:
            out.append(message if blocks is message.blocks else Message(message.role, blocks))
    if expected:  # it ends with calls nobody answered
        out.append(Message("user", _answer((), expected)))
    if out and out[0].role != "user":  # the first user message held only stray results: go again
        return repaired(out[1:])
    return out


def _answer(blocks: tuple[Block, ...], expected: list[str]) -> tuple[Block, ...]:
    """The user message's blocks with a result for each expected call, results first, in call order
    (the same tuple when it has them so already)."""
    results = {block.tool_use_id: block for block in blocks if isinstance(block, ToolResult)}
    if not expected and not results:
        return blocks
    others = [block for block in blocks if not isinstance(block, ToolResult)]
    answered = tuple([*(results.get(call_id) or interrupted_result(call_id) for call_id in expected), *others])
    if len(answered) == len(blocks) and all(a is b for a, b in zip(answered, blocks, strict=True)):
        return blocks
    return answered


def interrupted_result(call_id: str) -> ToolResult:
    return ToolResult(call_id, INTERRUPTED, is_error=True)
