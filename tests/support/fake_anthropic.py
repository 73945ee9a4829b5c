"""Test conveniences around the scripted model server: two FIFO scripts, waits, builders, prompt-cache simulation.

Tests script the replies they expect the product to need, in two queues: ``script`` for the
conversation (streamed requests) and ``script_auxiliary`` for the auxiliary model's side calls
(titles, recall summaries: not streamed), so a test never has to guess where a title request
falls among the turns. Anything the product asks beyond a script fails loudly with a 500
"script exhausted" (which the product survives: a title falls back to the first user line).
``PrefixCache`` mimics the provider's prompt cache so a test (or a benchmark in bench/) can
measure how much of each prompt the product's cache breakpoints save.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import ssl
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio.to_thread
import pytest

from acp_hermes.testing.request_checks import prompt_blocks
from acp_hermes.testing.scripted_model import (
    DropConnection,
    HttpError,
    MessageReply,
    ModelRequest,
    RawBody,
    Reply,
    ScriptedModelServer,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
    estimate_output_tokens,
)

DEFAULT_WAIT = 10.0
FAKE_API_KEY = "sk-ant-fake-test-key"

ScriptItem = Reply | Callable[[ModelRequest], Reply]


# ----------------------------------------------------------------------------------------------------
# Prompt-cache simulation


@dataclass(frozen=True)
class CacheAccount:
    """How one request's input splits into uncached, cache-read and cache-written tokens."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @property
    def read_share(self) -> float:
        return self.cache_read_input_tokens / self.total if self.total else 0.0


class PrefixCache:
    """The provider's prefix cache, minus time: every prefix written stays readable (always within TTL).

    A request's blocks (tools, system, messages) are hashed as prefixes. Each cache_control breakpoint
    makes the prefix ending at that block cacheable. The longest breakpoint prefix already written is
    read; from there up to the last breakpoint is written; the rest is plain input. Only exact
    breakpoint positions are matched (the real API also looks back ~20 blocks, so this is stricter).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: set[bytes] = set()
        self.accounts: list[CacheAccount] = []

    def account(self, body: Mapping[str, Any]) -> CacheAccount:
        blocks = prompt_blocks(body)
        running = hashlib.sha256(str(body.get("model")).encode())
        keys: list[bytes] = []
        totals: list[int] = []
        for block in blocks:
            running.update(block.canonical.encode())
            keys.append(running.copy().digest())
            totals.append((totals[-1] if totals else 0) + block.tokens)
        total = totals[-1] if totals else 0
        breakpoints = [position for position, block in enumerate(blocks) if block.breakpoint]
        with self._lock:
            if not breakpoints:
                result = CacheAccount(total, 0, 0)
            else:
                hits = [position for position in breakpoints if keys[position] in self._written]
                read = totals[max(hits)] if hits else 0
                cached_end = totals[breakpoints[-1]]
                result = CacheAccount(total - cached_end, read, cached_end - read)
                self._written.update(keys[position] for position in breakpoints)
            self.accounts.append(result)
        return result


# ----------------------------------------------------------------------------------------------------
# GET /v1/models

MODELS_PATH = "/v1/models"
LISTED_MODELS = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5")


class _ServerWithModels(ScriptedModelServer):
    """The scripted Messages API plus ``GET /v1/models``, which checks ``x-api-key`` as the real API does."""

    def __init__(self, responder: Callable[[ModelRequest], Reply], accepted_key: Callable[[], str],
                 tls: ssl.SSLContext | None = None) -> None:
        super().__init__(responder, tls=tls)
        self._key = accepted_key

    def _reply_for(self, request: ModelRequest, body_error: str | None) -> Reply:
        if request.method == "GET" and urlsplit(request.path).path == MODELS_PATH:
            return models_reply(request, self._key())
        return super()._reply_for(request, body_error)


def models_reply(request: ModelRequest, accepted_key: str) -> Reply:
    """The model list (``limit`` honoured), or the API's 401 for a missing or wrong key (sent as
    ``x-api-key`` or, as newer SDKs do, ``Authorization: Bearer``)."""
    sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
    if sent != accepted_key:
        return HttpError(401, "invalid x-api-key", error_type="authentication_error")
    limit = int(parse_qs(urlsplit(request.path).query).get("limit", ["20"])[0])
    listed = [{"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z"}
              for model in LISTED_MODELS[:limit]]
    page = {"data": listed, "has_more": limit < len(LISTED_MODELS),
            "first_id": listed[0]["id"] if listed else None, "last_id": listed[-1]["id"] if listed else None}
    return RawBody(json.dumps(page).encode(), "application/json")


# ----------------------------------------------------------------------------------------------------
# The fake


class FakeAnthropic:
    """A started-on-demand scripted Messages API: ``script()`` replies, then point the product at ``env()``."""

    def __init__(self, *, simulate_cache: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.cache = PrefixCache() if simulate_cache else None
        self._script: deque[ScriptItem] = deque()
        self._auxiliary: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self.api_key = FAKE_API_KEY  # the one key GET /v1/models accepts
        self.server = _ServerWithModels(self._respond, lambda: self.api_key, tls)  # tls: HTTPS, as the real API
        # Rate-limit headers (``anthropic-ratelimit-*``) sent with every conversation answer and error,
        # as the real API sends them: ``rate_limits(requests_remaining=..., ...)`` makes them.
        self.rate_limit_headers: dict[str, str] = {}

    def start(self) -> FakeAnthropic:
        self.server.start()
        return self

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for a spawned product: our base URL and a dummy key."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": FAKE_API_KEY, **extra}

    # scripting

    def script(self, *replies: ScriptItem) -> None:
        """Queue replies to conversation (streamed) requests, in arrival order; a callable gets the
        request and decides."""
        with self._lock:
            self._script.extend(replies)

    def script_auxiliary(self, *replies: ScriptItem) -> None:
        """Queue replies to auxiliary (non-streamed) requests: session titles, recall summaries."""
        with self._lock:
            self._auxiliary.extend(replies)

    @property
    def unused_replies(self) -> int:
        """Replies still queued, in both scripts."""
        with self._lock:
            return len(self._script) + len(self._auxiliary)

    def _respond(self, request: ModelRequest) -> Reply:
        queue = self._script if request.stream else self._auxiliary
        with self._lock:
            item = queue.popleft() if queue else None
        if item is None:
            kind = "conversation" if request.stream else "auxiliary"
            return HttpError(
                500,
                f"fake model: {kind} script exhausted (request {request.index} was not scripted)",
                error_type="api_error",
                headers={"x-should-retry": "false"},
            )
        reply = item(request) if callable(item) else item
        if self.rate_limit_headers and isinstance(reply, MessageReply | HttpError):
            reply = dataclasses.replace(reply, headers={**self.rate_limit_headers, **reply.headers})
        if self.cache is not None and isinstance(reply, MessageReply):
            account = self.cache.account(request.body)
            if reply.usage is None:
                usage = Usage(
                    input_tokens=account.input_tokens,
                    output_tokens=estimate_output_tokens(reply.content),
                    cache_read_input_tokens=account.cache_read_input_tokens,
                    cache_creation_input_tokens=account.cache_creation_input_tokens,
                )
                reply = dataclasses.replace(reply, usage=usage)
        return reply

    # observing

    @property
    def requests(self) -> list[Any]:
        """Parsed JSON bodies of every request, in arrival order."""
        return [request.body for request in self.server.requests]

    @property
    def stream_requests(self) -> list[Any]:
        """Bodies of the streamed (conversation) requests only: auxiliary calls such as session
        titles are not streamed and may arrive at any time after a first exchange."""
        return [body for body in self.requests if isinstance(body, dict) and body.get("stream")]

    @property
    def auxiliary_requests(self) -> list[Any]:
        """Bodies of the auxiliary (non-streamed) requests."""
        return [body for body in self.requests if isinstance(body, dict) and not body.get("stream")]

    @property
    def last_request(self) -> Any:
        requests = self.server.requests
        if not requests:
            raise AssertionError("fake model: no request received yet")
        return requests[-1].body

    @property
    def disconnects(self) -> list[int]:
        return self.server.disconnects

    def wait_for_request(self, n: int, timeout: float = DEFAULT_WAIT) -> Any:
        """Block until ``n`` requests arrived (1-based) and return the n-th body."""
        if not self.server.wait_for_requests(n, timeout):
            got = len(self.server.requests)
            raise AssertionError(f"fake model: waited {timeout}s for request {n}, only {got} arrived")
        return self.server.requests[n - 1].body

    def wait_for_disconnect(self, timeout: float = DEFAULT_WAIT, count: int = 1) -> int:
        """Block until ``count`` clients hung up mid-stream; return the request index of the count-th."""
        if not self.server.wait_for_disconnects(count, timeout):
            raise AssertionError(f"fake model: no client disconnect within {timeout}s (seen {self.disconnects})")
        return self.server.disconnects[count - 1]

    async def wait_for_request_async(self, n: int, timeout: float = DEFAULT_WAIT) -> Any:
        """``wait_for_request`` without blocking the event loop (the ACP client must keep reading)."""
        return await anyio.to_thread.run_sync(self.wait_for_request, n, timeout, abandon_on_cancel=True)

    async def wait_for_disconnect_async(self, timeout: float = DEFAULT_WAIT, count: int = 1) -> int:
        return await anyio.to_thread.run_sync(self.wait_for_disconnect, timeout, count, abandon_on_cancel=True)


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


# ----------------------------------------------------------------------------------------------------
# Reply builders

_tool_ids = itertools.count(1)


def next_tool_id() -> str:
    return f"toolu_fake_{next(_tool_ids):04d}"


def texts_of(value: Any) -> list[str]:
    """Every text in a request body's system or messages (string contents and text blocks), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in texts_of(item)]
    if isinstance(value, dict):
        if value.get("type") == "text":
            return [str(value.get("text") or "")]
        if "content" in value:
            return texts_of(value["content"])
    return []


def text_reply(
    text: str, *, chunks: int = 1, stop_reason: StopReason = "end_turn", usage: Usage | None = None
) -> MessageReply:
    return MessageReply([TextBlock(text, chunks=chunks)], stop_reason=stop_reason, usage=usage)


def tool_reply(
    name: str, input: Mapping[str, Any], *, id: str | None = None, text: str | None = None, chunks: int = 3
) -> MessageReply:
    """One tool call (optionally preceded by text), stop_reason ``tool_use``."""
    call = ToolUseBlock(id or next_tool_id(), name, dict(input), chunks=chunks)
    return MessageReply([*([TextBlock(text)] if text else []), call], stop_reason="tool_use")


def tool_calls_reply(*calls: tuple[str, Mapping[str, Any]], text: str | None = None) -> MessageReply:
    """Several tool calls in one assistant turn (a parallel batch)."""
    blocks = [ToolUseBlock(next_tool_id(), name, dict(arguments), chunks=3) for name, arguments in calls]
    return MessageReply([*([TextBlock(text)] if text else []), *blocks], stop_reason="tool_use")


def thinking_then_text(
    thinking: str, text: str, *, signature: str = "fake-thinking-signature", chunks: int = 2
) -> MessageReply:
    return MessageReply(
        [ThinkingBlock(thinking, signature=signature, chunks=chunks), TextBlock(text, chunks=chunks)],
        stop_reason="end_turn",
    )


def rate_limit_headers(*, requests: tuple[int, int] = (50, 49), tokens: tuple[int, int] = (400_000, 390_000),
                       reset: str = "2026-11-29T08:00:00Z") -> dict[str, str]:
    """The API's ``anthropic-ratelimit-*`` headers: (limit, remaining) for requests and tokens, one reset."""
    headers = {}
    for name, (limit, remaining) in (("requests", requests), ("tokens", tokens)):
        headers[f"anthropic-ratelimit-{name}-limit"] = str(limit)
        headers[f"anthropic-ratelimit-{name}-remaining"] = str(remaining)
        headers[f"anthropic-ratelimit-{name}-reset"] = reset
    return headers


def error_reply(
    status: int,
    retry_after: float | None = None,
    *,
    retry_after_ms: float | None = None,
    message: str = "",
    error_type: str | None = None,
) -> HttpError:
    return HttpError(
        status, message=message, error_type=error_type, retry_after=retry_after, retry_after_ms=retry_after_ms
    )


def slow_text_reply(n_chunks: int, delay: float, *, text: str | None = None) -> MessageReply:
    """A text stream of ``n_chunks`` deltas with ``delay`` seconds between events, for cancel tests."""
    body = text if text is not None else "".join(f"word{number} " for number in range(n_chunks))
    return MessageReply([TextBlock(body, chunks=n_chunks)], event_delay=delay)


def drop_connection() -> DropConnection:
    return DropConnection()


# ----------------------------------------------------------------------------------------------------
# Delegation: replies by who asks

# How a delegated task's child session's system prompt starts (``core.system_prompt.SUBAGENT_IDENTITY``).
SUBAGENT_PROMPT_START = "You are a subagent of acp-hermes"


def system_text(body: Mapping[str, Any]) -> str:
    """A request's system prompt as one text."""
    return "".join(texts_of(body.get("system") or []))


def is_subagent_request(body: Any) -> bool:
    """Whether a conversation request comes from a child session (a delegated task)."""
    return isinstance(body, Mapping) and system_text(body).startswith(SUBAGENT_PROMPT_START)


def first_user_text(body: Mapping[str, Any]) -> str:
    """The text of a request's first message: a child's task (its goal, then any context)."""
    messages = body.get("messages") or []
    return "".join(texts_of(messages[0])) if messages else ""


class DelegationRouter:
    """Replies by who asks, for delegation tests whose children's requests interleave: the parent's
    replies in order, and each child's (found by how its task starts) in order.

    Script it with ``fake.script(*router.items())``: one entry per reply it holds, so the fake's FIFO
    and the router agree on how many requests are expected. A reply may be a callable of the request
    (one that holds it, say). A request nobody scripted gets a 500 the product does not retry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parent: deque[ScriptItem] = deque()
        self._children: dict[str, deque[ScriptItem]] = {}

    def parent(self, *replies: ScriptItem) -> DelegationRouter:
        with self._lock:
            self._parent.extend(replies)
        return self

    def child(self, goal: str, *replies: ScriptItem) -> DelegationRouter:
        """Replies to the child whose task starts with ``goal``."""
        with self._lock:
            self._children.setdefault(goal, deque()).extend(replies)
        return self

    def items(self) -> list[ScriptItem]:
        with self._lock:
            count = len(self._parent) + sum(len(queue) for queue in self._children.values())
        return [self] * count

    def __call__(self, request: ModelRequest) -> Reply:
        body = request.body
        with self._lock:
            if is_subagent_request(body):
                asked = first_user_text(body)
                queue = next((q for goal, q in self._children.items() if asked.startswith(goal)), None)
                who = f"child {asked[:60]!r}"
            else:
                queue, who = self._parent, "parent"
            reply = queue.popleft() if queue else None
        if reply is None:
            return HttpError(500, f"fake model: no reply scripted for the {who}", error_type="api_error",
                             headers={"x-should-retry": "false"})
        return reply(request) if callable(reply) else reply
