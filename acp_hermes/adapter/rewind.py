"""The rewind extension on the wire: ``_session/rewind_points`` and ``_session/rewind``.

Shaped after what claude-agent-acp and codex-acp propose (``_session/rewind`` with ``beforeMessage:
{messageId, messageFingerprint, messageOccurrence}`` answered ``{rewound, reason?}``; a ``mode`` of
``files``, ``conversation`` or ``both`` and a ``dryRun``), advertised in ``initialize``'s ``_meta``
as ``sessionRewind``. Documented in ``docs/checkpoints.md``.

Both requests' params are checked whole (``adapter.rewind_params``) before anything happens: a
``dryRun`` of ``"yes"`` is refused (-32602), never read as "not a dry run", and a refused rewind
cancels no turn and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_hermes.core.errors import InvalidInput

if TYPE_CHECKING:  # the rewind's code loads when a client first calls it, not on the way to initialize
    from acp_hermes.core.rewind import RewindPoint
    from acp_hermes.core.rollback import RollbackResult
    from acp_hermes.core.session import Session

POINTS_METHOD = "session/rewind_points"  # as the router hands it over: without the leading "_"
REWIND_METHOD = "session/rewind"
CAPABILITY = {"sessionRewind": {"methods": ["_session/rewind", "_session/rewind_points"],
                                "modes": ["files", "conversation", "both"], "dryRun": True}}


def session_id_of(params: dict[str, Any]) -> str:
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInput("sessionId must be a non-empty string")
    return session_id


async def points(session: Session, params: dict[str, Any]) -> dict[str, Any]:
    from acp_hermes.adapter.rewind_params import PointsParams, checked
    from acp_hermes.core.rewind import rewind_points

    checked(PointsParams, params)
    return {"points": [_point(point) for point in await rewind_points(session.state, session.services)]}


async def rewind_to(session: Session, params: dict[str, Any]) -> dict[str, Any]:
    from acp_hermes.adapter.rewind_params import RewindParams, checked
    from acp_hermes.core.rewind import rewind

    request = checked(RewindParams, params)  # all of it, before a turn is cancelled or anything read
    target = request.before_message
    if session.busy:
        if not request.interrupt_if_running:
            return {"rewound": False, "reason": "busy", "sessionId": session.id}
        session.cancel()
    async with session.exclusive():
        outcome = await rewind(session.state, session.services, target.message_id, fingerprint_text=target.fingerprint,
                               occurrence=target.occurrence or 1, mode=request.mode or "conversation",
                               dry_run=bool(request.dry_run), include_edited=bool(request.include_edited))
    result: dict[str, Any] = {"rewound": outcome.rewound, "sessionId": session.id}
    if outcome.reason:
        result["reason"] = outcome.reason
    if outcome.files is not None:
        result["files"] = _files(outcome.files)
    if outcome.messages_dropped is not None:
        result["conversation"] = {"rewound": outcome.rewound, "messagesDropped": outcome.messages_dropped}
    return result


def _point(point: RewindPoint) -> dict[str, Any]:
    return {
        "messageId": point.message_id,
        "messageFingerprint": point.fingerprint,
        "messageOccurrence": point.occurrence,
        "index": point.index,
        "text": point.text[:500],
        "createdAt": point.created_at,
        "checkpoint": point.checkpoint,
        "conversation": point.conversation,
    }


def _files(result: RollbackResult) -> dict[str, Any]:
    return {"restored": list(result.restored), "skipped": list(result.skipped), "failed": list(result.failed),
            "message": result.message}
