"""The core's typed conversation as the Messages API writes it, and back (``model.provider``'s
conversions), for tests that state a history or a request in the API's JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_hermes.model.messages import Block, Message
from acp_hermes.model.provider import blocks_from_wire, message_from_wire, messages_to_wire


def wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return messages_to_wire(messages)


def typed(messages: Sequence[dict[str, Any]]) -> list[Message]:
    return [message_from_wire(message) for message in messages]


def blocks(*content: dict[str, Any]) -> tuple[Block, ...]:
    return blocks_from_wire(list(content))
