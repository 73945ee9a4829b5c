"""The params of ``_session/rewind`` and ``_session/rewind_points``, of ``session/rewind`` and
``session/edit_prompt`` (Session Rewind v2), and a fork's message (``messageId``, or AIR's
``_meta.jetbrains.air.fork``), as strict pydantic models.

Imported when a client first asks for a rewind (building the classes costs a few milliseconds that
``initialize`` need not pay). Strict: ``"yes"`` or ``1`` is no boolean and ``true`` no integer, so a
malformed ``dryRun`` is refused rather than read as "not a dry run". A null counts as absent, as in
ACP's own schema; keys this version does not know are left alone, as ACP's are.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acp_hermes.core.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)


class PointsParams(_Strict):
    session_id: str = Field(alias="sessionId", min_length=1)
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class BeforeMessage(_Strict):
    message_id: str = Field(alias="messageId")
    fingerprint: str | None = Field(None, alias="messageFingerprint")
    occurrence: int | None = Field(None, alias="messageOccurrence", ge=1)


class RewindParams(_Strict):
    session_id: str = Field(alias="sessionId", min_length=1)
    before_message: BeforeMessage = Field(alias="beforeMessage")
    mode: Literal["files", "conversation", "both"] | None = None
    dry_run: bool | None = Field(None, alias="dryRun")
    include_edited: bool | None = Field(None, alias="includeEdited")
    interrupt_if_running: bool | None = Field(None, alias="interruptIfRunning")
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class SessionRewindParams(_Strict):
    session_id: str = Field(alias="sessionId", min_length=1)
    to_message_id: str = Field(alias="toMessageId", min_length=1)
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class EditPromptParams(_Strict):
    session_id: str = Field(alias="sessionId", min_length=1)
    message_id: str = Field(alias="messageId", min_length=1)
    content: list[dict[str, Any]] = Field(min_length=1)
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class AirFork(_Strict):
    """AIR's ``_meta.jetbrains.air.fork``: version 1 is the only one there is."""

    version: Literal[1]
    message_id: str = Field(alias="messageId", min_length=1)
    fingerprint: str | None = Field(None, alias="messageFingerprint")
    occurrence: int | None = Field(None, alias="messageOccurrence", ge=1)


class AirMeta(_Strict):
    fork: AirFork | None = None


class JetBrainsMeta(_Strict):
    air: AirMeta | None = None


class ForkMeta(_Strict):
    jetbrains: JetBrainsMeta | None = None


class ForkAt(_Strict):
    """What of ``session/fork``'s params says where to fork (the rest is the SDK's to check)."""

    message_id: str | None = Field(None, alias="messageId", min_length=1)
    meta: ForkMeta | None = Field(None, alias="_meta")


def checked(model: type[M], params: dict[str, Any]) -> M:
    """``params`` as ``model``, or InvalidInput naming the first field that is wrong and what it was."""
    try:
        return model.model_validate(params)
    except ValidationError as problem:
        error = problem.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "params"
        if error["type"] == "missing":
            raise InvalidInput(f"{field} is required") from None
        message = "Input should be an object" if error["type"] in _NOT_AN_OBJECT else error["msg"]
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InvalidInput(f"{field}: {message} (got {shown})") from None


_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})
