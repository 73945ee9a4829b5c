"""A conversation's timeline on the wire: fork at a message, ``session/rewind`` and ``session/edit_prompt``.

Three drafts on ACP's track, none yet in a published schema (``docs/timeline.md`` says which shapes
were chosen where no schema has them):

- fork at a message (RFD "Forking sessions at a specific message"): ``session/fork`` with an inclusive
  ``messageId``, or AIR's ``_meta.jetbrains.air.fork {version: 1, messageId, messageFingerprint?,
  messageOccurrence?}``; advertised as ``sessionCapabilities.fork.atMessageId``. Files are not
  forked: the answer's ``_meta`` says so, with the ``/rollback`` that would match, when a later turn
  changed files.
- Session Rewind v2 (ACP PR #1321): ``session/rewind {sessionId, toMessageId}`` keeps that message and
  what came before it; ``session/edit_prompt {sessionId, messageId, content}`` goes back to just before
  that prompt and runs the edited one as a new turn under the same id. After either, a
  ``history_truncated`` update names what left the conversation. Advertised as
  ``sessionCapabilities.rewind``, under the unstable session capabilities; only a client that calls
  these methods ever sees ``history_truncated``.

The conversation half is ``core.rewind.cut_conversation``, shared with ``_session/rewind``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when a client first forks at a message or rewinds, not on the way to initialize
    from acp_hermes.core.rewind import MessagePoint
    from acp_hermes.core.session import Session
    from acp_hermes.core.truncation import Truncation

REWIND_METHOD = "session/rewind"
EDIT_PROMPT_METHOD = "session/edit_prompt"
FORK_CAPABILITY: dict[str, Any] = {"atMessageId": True}
REWIND_CAPABILITY: dict[str, Any] = {}


def fork_point(params: dict[str, Any]) -> MessagePoint | None:
    """Where ``session/fork``'s raw params ask to fork: ``messageId``, else AIR's form; None: the whole
    session. InvalidInput (-32602) for a malformed one, before anything is forked."""
    from acp_hermes.adapter.rewind_params import ForkAt, checked
    from acp_hermes.core.rewind import MessagePoint

    request = checked(ForkAt, params)
    air = request.meta.jetbrains.air.fork if request.meta and request.meta.jetbrains and \
        request.meta.jetbrains.air else None
    if request.message_id is not None:
        return MessagePoint(request.message_id)
    if air is not None:
        return MessagePoint(air.message_id, air.fingerprint, air.occurrence or 1)
    return None


def fork_meta(rollback: int | None) -> dict[str, Any]:
    """The fork answer's ``_meta``: files are not forked, and which ``/rollback`` in the original
    session would put them back as they were at the fork's message."""
    if rollback is None:
        return {}
    return {"_meta": {"acp-hermes": {"files": {
        "forked": False, "rollback": rollback,
        "message": (f"Files are not forked: the workspace holds what later turns of the original session "
                    f"changed. `/rollback {rollback}` there puts them back as they were at this message."),
    }}}}


def history_truncated(cut: Truncation) -> dict[str, Any]:
    """The ``history_truncated`` update: the messages no longer in the conversation, the one it ends
    with and how many it still shows."""
    update: dict[str, Any] = {"sessionUpdate": "history_truncated", "removedMessageIds": list(cut.removed),
                              "remainingMessageCount": cut.remaining}
    if cut.last_message_id is not None:
        update["lastMessageId"] = cut.last_message_id
    return update


async def rewind(session: Session, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``session/rewind``: its answer and the ``history_truncated`` update to send. A running turn is
    cancelled first, as the RFD asks; the params are checked whole before that."""
    from acp_hermes.adapter.rewind_params import SessionRewindParams, checked
    from acp_hermes.core.rewind import MessagePoint, rewind_to_message

    request = checked(SessionRewindParams, params)
    if session.busy:
        session.cancel()
    async with session.exclusive():
        _, cut = await rewind_to_message(session.state, session.services, MessagePoint(request.to_message_id),
                                         keep=True)
    result: dict[str, Any] = {"remainingMessageCount": cut.remaining}
    if cut.last_message_id is not None:
        result["lastMessageId"] = cut.last_message_id
    return result, history_truncated(cut)


async def cut_for_edit(session: Session, params: dict[str, Any]) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """``session/edit_prompt``'s first half: the conversation back to just before the prompt. The
    prompt's id, the edited content (checked as a prompt's blocks) and the ``history_truncated`` update."""
    from acp.schema import PromptRequest
    from pydantic import ValidationError

    from acp_hermes.adapter.rewind_params import EditPromptParams, checked
    from acp_hermes.core.errors import InvalidInput
    from acp_hermes.core.rewind import MessagePoint, rewind_to_message

    request = checked(EditPromptParams, params)
    try:
        prompt = PromptRequest.model_validate({"sessionId": request.session_id, "prompt": request.content}).prompt
    except ValidationError as problem:
        raise InvalidInput(f"content: not a prompt's content blocks ({problem.errors()[0]['msg']})") from None
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in prompt]
    if session.busy:
        session.cancel()
    async with session.exclusive():
        located, cut = await rewind_to_message(session.state, session.services, MessagePoint(request.message_id),
                                               keep=False)
    return located.message_id, blocks, history_truncated(cut)
