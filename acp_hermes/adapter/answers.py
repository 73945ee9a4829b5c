"""The handlers' answers as the SDK's response models, written as the JSON the adapter built.

``HermesAgent`` implements the SDK's ``Agent`` protocol, whose handlers return its response models.
The adapter builds these answers as JSON (``adapter.handshake``: the reception sends the same ones
before the SDK is loaded), in its own key order and with fields the SDK's models do not know (the
drafts' ``sessionCapabilities.rewind`` and ``fork.atMessageId``). A model validated from that JSON
would drop those fields, and the SDK's serialisation would reorder the rest; so each answer here is
its model, validated from the JSON, and is written as exactly that JSON: the bytes on the wire are
the ones the builders made (``tests/unit/adapter/test_answers.py``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from acp.schema import (
    BaseModel,
    ForkSessionResponse,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
)
from pydantic import PrivateAttr, SerializerFunctionWrapHandler, ValidationError, model_serializer

A = TypeVar("A", bound="AsBuilt")


class AsBuilt(BaseModel):
    """A response model that is written as the JSON it was validated from (``of``); one made
    otherwise is written as its model."""

    _built: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def of(cls: type[A], built: dict[str, Any]) -> A:
        """``built`` as this model. One the schema refuses is a bug of ours, not of the client's
        params: a RuntimeError (-32603), not the ValidationError the SDK would answer -32602."""
        try:
            answer = cls.model_validate(built)
        except ValidationError as exc:
            raise RuntimeError(f"the answer does not fit the SDK's {cls.__name__}: {exc}") from None
        answer._built = built
        return answer

    @model_serializer(mode="wrap")
    def _as_built(self, serialize: SerializerFunctionWrapHandler) -> Any:
        # Read where pydantic keeps private attributes: the SDK's BaseModel.__getattr__ hides them.
        built = (self.__pydantic_private__ or {}).get("_built")
        return built if built is not None else serialize(self)


class InitializeAnswer(AsBuilt, InitializeResponse):
    pass


class NewSessionAnswer(AsBuilt, NewSessionResponse):
    pass


class LoadSessionAnswer(AsBuilt, LoadSessionResponse):
    pass


class ResumeSessionAnswer(AsBuilt, ResumeSessionResponse):
    pass


class ForkSessionAnswer(AsBuilt, ForkSessionResponse):
    pass


class ListSessionsAnswer(AsBuilt, ListSessionsResponse):
    pass


class SetConfigOptionAnswer(AsBuilt, SetSessionConfigOptionResponse):
    pass
