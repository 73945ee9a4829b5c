"""The steering extension on the wire: ``_session/steering``.

The shape claude-agent-acp and codex-acp share: the request is ``{sessionId, prompt}`` (``prompt`` as
in ``session/prompt``), the answer ``{outcome}``. ``injected``: a turn runs and its next model request
carries the words. With no turn running, ``_meta.steering.idleBehavior`` decides: ``startNewTurn``
(the default) starts one (``startedNewTurn``; its updates stream as any turn's, nobody awaits its end),
``promptRequired`` takes nothing (``promptRequired``, reason ``noRunningTurn``: send it as a
``session/prompt``), ``fail`` answers ``failed``. Any other value is refused (-32602). Advertised as
``_meta.steering`` in ``initialize``'s answer, at its top level as those agents do it.
Documented in ``docs/steering.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acp_hermes.adapter.prompt_blocks import to_parts
from acp_hermes.core.errors import InvalidInput

if TYPE_CHECKING:
    from acp_hermes.core.session import Session
    from acp_hermes.core.user_prompt import PromptPart

METHOD = "session/steering"  # as the router hands it over: without the leading "_"
IDLE_BEHAVIORS = ("startNewTurn", "promptRequired", "fail")
CAPABILITY = {"steering": {"supported": True, "idlePromptRequired": True, "idleBehaviors": list(IDLE_BEHAVIORS)}}


def prompt_parts(params: dict[str, Any]) -> list[PromptPart]:
    """The steer's words, checked as a ``session/prompt``'s are."""
    from acp.schema import PromptRequest
    from pydantic import ValidationError

    try:
        request = PromptRequest.model_validate({"sessionId": params.get("sessionId"), "prompt": params.get("prompt")})
    except ValidationError as problem:
        raise InvalidInput(f"prompt must be a list of content blocks, as in session/prompt: "
                           f"{problem.errors()[0]['msg']}") from None
    if not request.prompt:
        raise InvalidInput("prompt is empty: nothing to steer with")
    return to_parts([block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in request.prompt])


def idle_behavior(params: dict[str, Any]) -> str:
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    behavior = steering.get("idleBehavior", "startNewTurn") if isinstance(steering, dict) else "startNewTurn"
    if behavior not in IDLE_BEHAVIORS:
        raise InvalidInput(f"_meta.steering.idleBehavior must be one of {', '.join(IDLE_BEHAVIORS)}, got {behavior!r}")
    return str(behavior)


async def steer(session: Session, params: dict[str, Any],
                start_turn: Callable[[Session, Sequence[PromptPart]], None]) -> dict[str, Any]:
    """Inject the steer into the running turn, or do what the client asked for when none runs."""
    parts = prompt_parts(params)
    behavior = idle_behavior(params)  # refused before anything is taken
    message_id = params.get("messageId")
    if await session.steer(parts, message_id if isinstance(message_id, str) and message_id else None):
        return {"outcome": "injected"}
    if behavior == "promptRequired":
        return {"outcome": "promptRequired", "reason": "noRunningTurn"}
    if behavior == "fail":
        return {"outcome": "failed", "reason": "noRunningTurn"}
    start_turn(session, parts)
    return {"outcome": "startedNewTurn"}
