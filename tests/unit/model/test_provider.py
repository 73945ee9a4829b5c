"""The Anthropic provider without a network: the request it builds, and how it sorts failures.

``request_body`` is pure. Failure handling is driven through ``AnthropicProvider.stream`` with a
stand-in client (the SDK's own HTTP is covered by the integration tests against the fake server).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import anthropic
import httpx2
import pytest

from acp_hermes.config import Settings
from acp_hermes.model.messages import Message
from acp_hermes.model.provider import (
    MAX_CACHE_BREAKPOINTS,
    AnthropicProvider,
    IncompleteStream,
    NotAStream,
    blocks_to_wire,
    describe_failure,
    request_body,
    retry_delay,
)
from acp_hermes.model.types import Completed, ModelError, ModelRequest, StreamEvent, TextDelta
from tests.support.wire import typed

EPHEMERAL = {"type": "ephemeral"}
REQUEST = httpx2.Request("POST", "https://api.example.test/v1/messages")


def marked(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(message index, block index) of every block that carries cache_control."""
    messages = enumerate(body["messages"])
    return [(m, b) for m, message in messages for b, block in enumerate(message["content"]) if "cache_control" in block]


def turns(count: int) -> list[Message]:
    return typed([{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"} for n in range(count)])


# -- request_body --------------------------------------------------------------------------------


@pytest.mark.parametrize(("ttl", "marker"), [("5m", EPHEMERAL), ("1h", {"type": "ephemeral", "ttl": "1h"})])
def test_the_system_prompt_is_one_cached_text_block(ttl: str, marker: dict[str, str]) -> None:
    body = request_body(ModelRequest("m", "be brief", turns(1), cache_ttl=ttl))
    assert body["system"] == [{"type": "text", "text": "be brief", "cache_control": marker}]
    assert body["messages"][0]["content"][-1]["cache_control"] == marker


@pytest.mark.parametrize(("system", "expected"), [("sys", [(3, 0), (4, 0), (5, 0)]),
                                                  ("", [(2, 0), (3, 0), (4, 0), (5, 0)])])
def test_the_last_messages_get_the_breakpoints_the_system_prompt_leaves(system: str,
                                                                         expected: list[tuple[int, int]]) -> None:
    body = request_body(ModelRequest("m", system, turns(6)))
    assert marked(body) == expected
    assert len(body.get("system", [])) + len(marked(body)) == MAX_CACHE_BREAKPOINTS


def test_breakpoints_skip_thinking_and_empty_text_blocks() -> None:
    messages = [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "answer"},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": ""},
        ]},
        {"role": "user", "content": [{"type": "redacted_thinking", "data": "x"}]},
    ]
    body = request_body(ModelRequest("m", "sys", typed(messages)))
    # message 2 has nothing cacheable, so its breakpoint goes to an earlier message
    assert marked(body) == [(0, 0), (1, 0)]


def test_the_callers_history_is_not_altered() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}]}, {"role": "user", "content": "b"},
                {"role": "assistant", "content": [{"type": "text", "text": "c"}]}]
    before = copy.deepcopy(messages)
    request_body(ModelRequest("m", "sys", typed(messages)))
    assert messages == before


def test_same_role_neighbours_are_merged_into_one_message() -> None:
    messages = [{"role": "user", "content": "first"}, {"role": "user", "content": [{"type": "text", "text": "second"}]},
                {"role": "assistant", "content": "reply"}]
    body = request_body(ModelRequest("m", "", typed(messages)))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["first", "second"]


@pytest.mark.parametrize(("tools", "expected"), [((), None), (({"name": "read_file", "input_schema": {}},),
                                                              [{"name": "read_file", "input_schema": {}}])])
def test_tools_are_sent_only_when_there_are_some(tools: tuple[dict[str, Any], ...], expected: Any) -> None:
    body = request_body(ModelRequest("m", "", turns(1), tools=tools))
    assert body.get("tools") == expected


@pytest.mark.parametrize(("budget", "thinking", "max_tokens"), [
    (None, None, 1000), (0, None, 1000), (4096, {"type": "enabled", "budget_tokens": 4096}, 5096)])
def test_the_thinking_budget_is_added_on_top_of_the_output_budget(budget: int | None, thinking: Any,
                                                                   max_tokens: int) -> None:
    body = request_body(ModelRequest("claude-x", "", turns(1), max_tokens=1000, thinking_budget=budget))
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens
    assert body["model"] == "claude-x"


# -- retry delays and messages ---------------------------------------------------------------------


@pytest.mark.parametrize(("retry_after", "expected"), [(2.5, 2.5), (-3.0, 0.0), (10_000.0, 60.0)])
def test_a_server_retry_after_is_honoured_within_bounds(retry_after: float, expected: float) -> None:
    assert retry_delay(0, Settings(), retry_after) == expected


@pytest.mark.parametrize("attempt", [0, 1, 3, 10])
def test_backoff_is_jittered_below_an_exponential_ceiling(attempt: int) -> None:
    settings = Settings(retry_base_delay=1.0, retry_max_delay=5.0)
    ceiling = min(5.0, 2.0**attempt)
    for _ in range(20):
        assert ceiling / 2 <= retry_delay(attempt, settings, None) <= ceiling


def status_error(status: int, body: Any = None, headers: dict[str, str] | None = None,
                 cls: type[anthropic.APIStatusError] = anthropic.APIStatusError) -> anthropic.APIStatusError:
    response = httpx2.Response(status, request=REQUEST, headers=headers or {})
    return cls("failed", response=response, body=body)


def api_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.parametrize(("error", "phrase"), [
    (status_error(401, cls=anthropic.AuthenticationError), "ANTHROPIC_API_KEY"),
    (status_error(403, api_body("permission_error", "no access"), cls=anthropic.PermissionDeniedError),
     "refused access (403): no access"),
    (status_error(404, api_body("not_found_error", "model: nope"), cls=anthropic.NotFoundError),
     "is the model name right?"),
    (status_error(500, api_body("api_error", "boom")), "returned an error (500): boom"),
    (status_error(200, api_body("overloaded_error", "Overloaded")), "stream broke off: Overloaded"),
    (anthropic.APITimeoutError(REQUEST), "did not answer in time"),
    (anthropic.APIConnectionError(request=REQUEST), "Could not reach the model API"),
    (httpx2.ReadError("reset by peer"), "connection to the model API broke off"),
    (NotAStream("not a stream: text/html"), "not a stream: text/html"),
    (ValueError("odd"), "The model call failed: ValueError: odd"),
])
def test_failures_are_described_in_a_sentence_the_user_can_act_on(error: BaseException, phrase: str) -> None:
    assert phrase in describe_failure(error)


# -- streaming through a stand-in client -------------------------------------------------------------


def ev(kind: str, **fields: Any) -> SimpleNamespace:
    return SimpleNamespace(type=kind, **fields)


@dataclass
class _Block:
    data: dict[str, Any]

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self.data)


USAGE = SimpleNamespace(input_tokens=3, output_tokens=1, cache_read_input_tokens=None, cache_creation_input_tokens=2)
START = ev("message_start", message=SimpleNamespace(usage=USAGE))
TEXT = [START, ev("content_block_start", index=0, content_block=_Block({"type": "text", "text": ""})),
        ev("content_block_delta", index=0, delta=SimpleNamespace(type="text_delta", text="hi")),
        ev("content_block_stop", index=0)]
STOP = [ev("message_delta", delta=SimpleNamespace(stop_reason="end_turn"), usage=SimpleNamespace(output_tokens=7)),
        ev("message_stop")]


@dataclass
class _Stream:
    events: list[Any]
    content_type: str = "text/event-stream"
    closed: bool = False

    @property
    def response(self) -> Any:
        return SimpleNamespace(headers={"content-type": self.content_type})

    async def __aiter__(self) -> AsyncIterator[Any]:
        for event in self.events:
            yield event

    async def close(self) -> None:
        self.closed = True


@dataclass
class _Client:
    """Answers each ``messages.create`` with the next script item: an exception or a stream."""

    script: list[BaseException | _Stream]
    calls: int = 0

    @property
    def messages(self) -> _Client:
        return self

    async def create(self, **params: Any) -> _Stream:
        assert params["stream"] is True
        item = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(item, BaseException):
            raise item
        return item


def provider_with(client: _Client, max_retries: int = 2) -> AnthropicProvider:
    provider = AnthropicProvider(Settings(max_retries=max_retries, retry_base_delay=0.0, retry_max_delay=0.0))
    provider._client = client  # type: ignore[assignment]  # no SDK client, no network
    return provider


async def collect(provider: AnthropicProvider) -> list[StreamEvent]:
    return [event async for event in provider.stream(ModelRequest("m", "sys", turns(1)))]


@pytest.mark.anyio
async def test_a_whole_stream_yields_deltas_then_the_completed_message_with_usage() -> None:
    client = _Client([_Stream(TEXT + STOP)])
    events = await collect(provider_with(client))
    assert events[0] == TextDelta("hi")
    done = events[-1]
    assert isinstance(done, Completed)
    assert blocks_to_wire(done.content) == [{"type": "text", "text": "hi"}]
    assert (done.usage.input_tokens, done.usage.output_tokens, done.usage.cache_write_tokens) == (3, 7, 2)
    assert client.script[0].closed  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_the_warm_up_is_held_back_until_the_first_output_has_been_handled() -> None:
    """``responding`` lets the warm-up's second step compete for the GIL: not while the first chunk is
    on its way to the client (the turn holds it until it asks for the next event)."""
    provider = provider_with(_Client([_Stream(TEXT + STOP)]))
    stream = provider.stream(ModelRequest("m", "sys", turns(1)))
    assert await anext(stream) == TextDelta("hi")
    assert not provider.responding.is_set()  # response headers and message_start came: not yet
    await anext(stream)
    assert provider.responding.is_set()
    await stream.aclose()


@pytest.mark.anyio
async def test_a_response_without_output_still_lets_the_warm_up_go_on() -> None:
    provider = provider_with(_Client([_Stream([], content_type="text/html")]), max_retries=0)
    with pytest.raises(ModelError):
        await collect(provider)
    assert provider.responding.is_set()


@pytest.mark.parametrize(("first", "cause", "match"), [
    (_Stream([], content_type="text/html"), NotAStream, r"not a Messages stream \(text/html\)"),
    (_Stream(TEXT), IncompleteStream, "ended before the message was complete"),  # after "hi" was shown
])
@pytest.mark.anyio
async def test_streams_that_are_not_retried(first: _Stream, cause: type[Exception], match: str) -> None:
    client = _Client([first, _Stream(TEXT + STOP)])
    with pytest.raises(ModelError, match=match) as raised:
        await collect(provider_with(client))
    assert isinstance(raised.value.__cause__, cause)
    assert client.calls == 1 and first.closed


@pytest.mark.anyio
async def test_a_stream_cut_off_before_anything_was_shown_is_retried() -> None:
    client = _Client([_Stream([START]), _Stream(TEXT + STOP)])
    events = await collect(provider_with(client))
    assert client.calls == 2 and isinstance(events[-1], Completed)


@pytest.mark.parametrize(("error", "retryable"), [
    *((status_error(status), True) for status in (408, 429, 500, 503, 529)),
    (status_error(400), False),
    (status_error(401, cls=anthropic.AuthenticationError), False),
    (status_error(404, cls=anthropic.NotFoundError), False),
    (status_error(200, api_body("overloaded_error", "x")), True),  # an error event in a 200 stream
    (status_error(200, api_body("invalid_request_error", "x")), False),
    (status_error(400, headers={"x-should-retry": "true"}), True),  # the server's word wins
    (status_error(529, headers={"x-should-retry": "false"}), False),
    (anthropic.APIConnectionError(request=REQUEST), True),
    (anthropic.APITimeoutError(REQUEST), True),
    (ValueError("a bug"), False),
])
@pytest.mark.anyio
async def test_which_failures_are_retried(error: Exception, retryable: bool) -> None:
    client = _Client([error, _Stream(TEXT + STOP)])
    if retryable:
        events = await collect(provider_with(client))
        assert isinstance(events[-1], Completed) and client.calls == 2
    else:
        with pytest.raises(ModelError) as raised:
            await collect(provider_with(client))
        assert raised.value.__cause__ is error and client.calls == 1


@pytest.mark.anyio
async def test_retries_stop_after_max_retries() -> None:
    client = _Client([status_error(529)])
    with pytest.raises(ModelError, match=r"\(529\)"):
        await collect(provider_with(client, max_retries=2))
    assert client.calls == 3
