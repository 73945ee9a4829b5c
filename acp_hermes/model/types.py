"""What the agent and a model provider exchange: requests, streamed events, usage, failures.

The loop sees only these values (the conversation as ``model.messages``); ``provider.AnthropicProvider``
makes them from the Anthropic Messages API and turns requests into it, and tests can make them from a
script.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from acp_hermes.model.messages import Block, Message, ServerToolResult, ServerToolUse
from acp_hermes.model.rate_limits import RateLimit
from acp_hermes_memory.values import value


@value
class Usage:
    """Token counts of one model call, or a sum of them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    web_searches: int = 0  # the API's web searches (server tools), charged per search

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.web_searches + other.web_searches,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the call, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@value
class ModelRequest:
    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[dict[str, Any]] = ()
    max_tokens: int = 16_384
    thinking_budget: int | None = None
    cache_ttl: str = "5m"


@value
class TextDelta:
    text: str


@value
class ThinkingDelta:
    text: str


@value
class ToolUseReady:
    """A complete tool call; ``arguments`` is None when the streamed JSON did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@value
class Completed:
    """The end of one model message: its content blocks as they go back into history."""

    content: tuple[Block, ...]
    stop_reason: str
    usage: Usage
    rate_limits: tuple[RateLimit, ...] = ()  # as the response's headers stated them (``model.rate_limits``)


# A server tool's call (``ServerToolUse``) and result (``ServerToolResult``) arrive as the blocks they are.
StreamEvent = TextDelta | ThinkingDelta | ToolUseReady | ServerToolUse | ServerToolResult | Completed


class ModelError(Exception):
    """A model call failed for good; the message is written for the user. ``status``: the API's HTTP
    status when it answered with an error (429: rate-limited, with no retry left); ``rate_limits``: the
    limits that answer stated."""

    def __init__(self, message: str, *, status: int | None = None,
                 rate_limits: tuple[RateLimit, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.rate_limits = rate_limits


class ServerToolsRejected(ModelError):
    """The endpoint refused the request's server tools (an Anthropic-compatible API without them)."""


class Provider(Protocol):
    """Streams one model message per request, and answers short side questions."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def complete(self, *, model: str, system: str, prompt: str, max_tokens: int = 512) -> tuple[str, Usage]: ...
