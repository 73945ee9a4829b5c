"""The scripted model server must look like the real Messages API to the real ``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import anyio
import pytest
from anthropic import AsyncAnthropic, AsyncStream

from acp_hermes.testing.request_checks import estimate_input_tokens, estimate_tokens, prompt_blocks
from acp_hermes.testing.scripted_model import (
    MessageReply,
    ModelRequest,
    ScriptedModelServer,
    StreamFailure,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
    split_evenly,
    stream_events,
)
from tests.support import fake_anthropic as fake_module
from tests.support.fake_anthropic import (
    FAKE_API_KEY,
    FakeAnthropic,
    PrefixCache,
    drop_connection,
    error_reply,
    slow_text_reply,
    text_reply,
    thinking_then_text,
    tool_calls_reply,
    tool_reply,
)

# The shared fixture; redundant (but harmless) once tests/conftest.py registers tests.support.fake_anthropic.
fake_anthropic = fake_module.fake_anthropic

MODEL = "claude-test-1"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
async def client(fake_anthropic: FakeAnthropic) -> AsyncIterator[AsyncAnthropic]:
    sdk = AsyncAnthropic(base_url=fake_anthropic.base_url, api_key=FAKE_API_KEY, max_retries=0)
    yield sdk
    await sdk.close()


async def raw_events(client: AsyncAnthropic, **params: Any) -> list[Any]:
    stream = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO, stream=True, **params)
    return [event async for event in stream]


# ----------------------------------------------------------------------------------------------------
# streamed messages


@pytest.mark.anyio
async def test_streamed_text_arrives_as_deltas_and_a_final_message(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(text_reply("Hello there, world", chunks=3))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        deltas = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert deltas == split_evenly("Hello there, world", 3)
    assert len(deltas) == 3
    assert [block.type for block in final.content] == ["text"]
    assert final.content[0].text == "Hello there, world"
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.id == "msg_scripted_0000"


@pytest.mark.anyio
async def test_stream_follows_the_api_event_order(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(MessageReply([TextBlock("ab", chunks=2), ToolUseBlock("toolu_1", "ls", {"path": "."})]))
    events = await raw_events(client)
    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0].message
    assert (start.role, start.content, start.stop_reason) == ("assistant", [], None)
    assert [event.index for event in events[1:8] if hasattr(event, "index")] == [0, 0, 0, 0, 1, 1, 1]
    assert events[5].content_block.input == {}
    assert events[8].delta.stop_reason == "tool_use"


@pytest.mark.anyio
async def test_thinking_streams_with_its_signature(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(thinking_then_text("First, read the file.", "Done.", signature="sig-123"))
    async with client.messages.stream(
        model=MODEL, max_tokens=2000, messages=HELLO, thinking={"type": "enabled", "budget_tokens": 1024}
    ) as stream:
        delta_types = [event.delta.type async for event in stream if event.type == "content_block_delta"]
        final = await stream.get_final_message()
    assert delta_types == ["thinking_delta", "thinking_delta", "signature_delta", "text_delta", "text_delta"]
    thinking, text = final.content
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == ("First, read the file.", "sig-123")
    assert text.text == "Done."


@pytest.mark.anyio
async def test_tool_input_split_mid_string_parses_to_the_same_dict(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    arguments = {"path": "src/naïve café.py", "old": 'print("hi")\n', "new": "x = [1, 2]", "replace_all": False}
    fake_anthropic.script(tool_reply("patch", arguments, id="toolu_abc", text="Editing.", chunks=7))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        pieces = [
            event.delta.partial_json
            async for event in stream
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta"
        ]
        final = await stream.get_final_message()
    assert len(pieces) == 7
    assert "".join(pieces) == json.dumps(arguments, ensure_ascii=False)
    assert any(piece.count('"') % 2 == 1 for piece in pieces), "some cut should land inside a string"
    call = final.content[1]
    assert (call.type, call.id, call.name, call.input) == ("tool_use", "toolu_abc", "patch", arguments)
    assert final.stop_reason == "tool_use"


@pytest.mark.anyio
async def test_parallel_tool_calls_get_distinct_ids(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(tool_calls_reply(("read", {"path": "a"}), ("read", {"path": "b"})))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = await stream.get_final_message()
    assert [block.input for block in final.content] == [{"path": "a"}, {"path": "b"}]
    assert len({block.id for block in final.content}) == 2


@pytest.mark.anyio
async def test_usage_with_cache_tokens_is_reported(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    usage = Usage(input_tokens=12, output_tokens=34, cache_read_input_tokens=5000, cache_creation_input_tokens=600)
    fake_anthropic.script(text_reply("ok", usage=usage))
    events = await raw_events(client)
    start_usage = events[0].message.usage
    assert (start_usage.input_tokens, start_usage.cache_read_input_tokens, start_usage.cache_creation_input_tokens) == (
        12,
        5000,
        600,
    )
    assert events[-2].usage.output_tokens == 34

    fake_anthropic.script(text_reply("ok", usage=usage))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = await stream.get_final_message()
    assert final.usage.input_tokens == 12
    assert final.usage.output_tokens == 34
    assert final.usage.cache_read_input_tokens == 5000
    assert final.usage.cache_creation_input_tokens == 600


@pytest.mark.anyio
async def test_default_usage_is_the_deterministic_estimate(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script_auxiliary(text_reply("four"))
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO, system="Be brief.")
    assert message.usage.input_tokens == estimate_input_tokens(fake_anthropic.last_request) > 0
    assert message.usage.output_tokens > 0
    assert estimate_tokens("x" * 8) == 2
    assert estimate_tokens("x" * 9) == 3


@pytest.mark.parametrize("stop_reason", ["end_turn", "max_tokens", "refusal", "stop_sequence", "pause_turn"])
@pytest.mark.anyio
async def test_stop_reasons_pass_through(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic, stop_reason: Any
) -> None:
    fake_anthropic.script(text_reply("partial", stop_reason=stop_reason))
    fake_anthropic.script_auxiliary(text_reply("partial", stop_reason=stop_reason))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        streamed = await stream.get_final_message()
    whole = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert streamed.stop_reason == whole.stop_reason == stop_reason


# ----------------------------------------------------------------------------------------------------
# non-streamed messages


@pytest.mark.anyio
async def test_non_streamed_request_gets_a_whole_message(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script_auxiliary(
        MessageReply([TextBlock("A short title", chunks=4)], usage=Usage(input_tokens=7, output_tokens=3))
    )
    message = await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
    assert isinstance(message, anthropic.types.Message)
    assert message.content[0].text == "A short title"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 3)
    assert message.stop_reason == "end_turn"
    assert fake_anthropic.server.requests[0].stream is False


# ----------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (403, anthropic.PermissionDeniedError, "permission_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (413, anthropic.ContentTooLargeError, "request_too_large"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (502, anthropic.InternalServerError, "api_error"),
        (503, anthropic.ServiceUnavailableError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
@pytest.mark.anyio
async def test_error_statuses_raise_the_matching_sdk_exception(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic, status: int, error_class: type, error_type: str
) -> None:
    fake_anthropic.script(error_reply(status, message="scripted failure"))
    with pytest.raises(error_class) as caught:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, stream=True)
    assert caught.value.status_code == status
    assert caught.value.type == error_type
    assert caught.value.api_message == "scripted failure"
    assert caught.value.request_id == "req_scripted_0000"


@pytest.mark.anyio
async def test_rate_limit_exposes_retry_after(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script_auxiliary(error_reply(429, retry_after=17))
    with pytest.raises(anthropic.RateLimitError) as caught:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert caught.value.response.headers["retry-after"] == "17"


@pytest.mark.anyio
async def test_sdk_retries_honour_retry_after_ms(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script_auxiliary(
        error_reply(529, retry_after_ms=5), error_reply(429, retry_after_ms=5), text_reply("third time")
    )
    async with AsyncAnthropic(base_url=fake_anthropic.base_url, api_key=FAKE_API_KEY, max_retries=2) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "third time"
    retry_counts = [request.headers.get("x-stainless-retry-count") for request in fake_anthropic.server.requests]
    assert retry_counts == ["0", "1", "2"]


@pytest.mark.anyio
async def test_dropped_connection_is_a_connection_error(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(drop_connection())
    fake_anthropic.script_auxiliary(text_reply("still here"))
    with pytest.raises(anthropic.APIConnectionError):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, stream=True)
    message = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "still here"


@pytest.mark.anyio
async def test_sdk_retries_a_dropped_connection(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script_auxiliary(drop_connection(), text_reply("recovered"))
    async with AsyncAnthropic(base_url=fake_anthropic.base_url, api_key=FAKE_API_KEY, max_retries=1) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "recovered"
    assert len(fake_anthropic.requests) == 2


@pytest.mark.anyio
async def test_mid_stream_error_event_raises_after_the_first_events(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(MessageReply([TextBlock("Hello world", chunks=4)], failure=StreamFailure(after_events=4)))
    seen: list[str] = []
    stream = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, stream=True)
    with pytest.raises(anthropic.APIStatusError) as caught:
        async for event in stream:
            seen.append(event.type)
    assert seen == ["message_start", "content_block_start", "content_block_delta"]  # the ping is not surfaced
    assert caught.value.type == "overloaded_error"


@pytest.mark.anyio
async def test_exhausted_script_fails_loudly_without_retries(fake_anthropic: FakeAnthropic) -> None:
    async with AsyncAnthropic(base_url=fake_anthropic.base_url, api_key=FAKE_API_KEY, max_retries=2) as sdk:
        with pytest.raises(anthropic.InternalServerError, match="script exhausted"):
            await sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert len(fake_anthropic.requests) == 1


@pytest.mark.anyio
async def test_failing_responder_becomes_a_500() -> None:
    def responder(request: ModelRequest) -> MessageReply:
        raise RuntimeError("boom")

    with ScriptedModelServer(responder) as server:
        async with AsyncAnthropic(base_url=server.base_url, api_key=FAKE_API_KEY, max_retries=0) as sdk:
            with pytest.raises(anthropic.InternalServerError, match="boom"):
                await sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)


# ----------------------------------------------------------------------------------------------------
# request checks the real API makes


@pytest.mark.anyio
async def test_more_than_four_cache_breakpoints_are_rejected_like_the_api(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(text_reply("unused"))
    marked = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"part {n}", "cache_control": marked} for n in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control"):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, system=system)
    assert fake_anthropic.unused_replies == 1


@pytest.mark.anyio
async def test_tool_use_without_a_tool_result_is_rejected_like_the_api(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    messages: Any = [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "ls", "input": {}}]},
        {"role": "user", "content": "never mind"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="toolu_9"):
        await client.messages.create(model=MODEL, max_tokens=10, messages=messages)
    messages[2] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a.py"}]}
    fake_anthropic.script_auxiliary(text_reply("one file"))
    message = await client.messages.create(model=MODEL, max_tokens=10, messages=messages)
    assert message.content[0].text == "one file"


# ----------------------------------------------------------------------------------------------------
# the request log, disconnects, concurrency


@pytest.mark.anyio
async def test_request_log_captures_the_request(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(text_reply("ok"))
    system = [{"type": "text", "text": "You are Hermes.", "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "ls", "description": "List", "input_schema": {"type": "object", "properties": {}}}]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    await raw_events(client, system=system, tools=tools, thinking=thinking)
    body = fake_anthropic.wait_for_request(1)
    assert body == fake_anthropic.last_request
    assert body["system"] == system
    assert body["tools"] == tools
    assert body["thinking"] == thinking
    assert body["messages"] == HELLO
    assert body["stream"] is True
    assert (body["model"], body["max_tokens"]) == (MODEL, 100)
    headers = fake_anthropic.server.requests[0].headers
    assert headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert "anthropic-version" in headers


@pytest.mark.anyio
async def test_closing_a_slow_stream_is_seen_as_a_disconnect(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(slow_text_reply(200, delay=0.05))
    fake_anthropic.script_auxiliary(text_reply("next"))
    stream = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, stream=True)
    assert isinstance(stream, AsyncStream)
    async for event in stream:
        if event.type == "content_block_delta":
            break
    await stream.close()
    assert await fake_anthropic.wait_for_disconnect_async(timeout=10) == 0
    assert fake_anthropic.disconnects == [0]
    message = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "next"


@pytest.mark.anyio
async def test_cancelling_the_consumer_task_closes_the_stream(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(slow_text_reply(200, delay=0.05))
    first_delta = anyio.Event()

    async def consume() -> None:
        async with client.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
            async for event in stream:
                if event.type == "content_block_delta":
                    first_delta.set()

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await first_delta.wait()
        group.cancel_scope.cancel()
    assert await fake_anthropic.wait_for_disconnect_async(timeout=10) == 0


@pytest.mark.anyio
async def test_a_completed_stream_is_not_a_disconnect(fake_anthropic: FakeAnthropic, client: AsyncAnthropic) -> None:
    fake_anthropic.script(slow_text_reply(3, delay=0.01))
    fake_anthropic.script_auxiliary(text_reply("after"))
    await raw_events(client)
    await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert fake_anthropic.disconnects == []


@pytest.mark.anyio
async def test_sequential_requests_reuse_one_keep_alive_connection(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(text_reply("a", chunks=1), text_reply("bb", chunks=2))
    fake_anthropic.script_auxiliary(error_reply(400), text_reply("c"))
    await raw_events(client)
    await raw_events(client)
    with pytest.raises(anthropic.BadRequestError):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    peers = {request.peer for request in fake_anthropic.server.requests}
    assert len(fake_anthropic.requests) == 4
    assert len(peers) == 1


@pytest.mark.anyio
async def test_concurrent_streams_each_get_their_own_answer(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    def echo(request: ModelRequest) -> MessageReply:
        question = request.body["messages"][-1]["content"]
        return MessageReply([TextBlock(f"echo: {question}", chunks=5)], event_delay=0.001)

    fake_anthropic.script(*[echo] * 12)
    answers: dict[int, str] = {}

    async def ask(number: int) -> None:
        messages: Any = [{"role": "user", "content": f"question {number}"}]
        async with client.messages.stream(model=MODEL, max_tokens=10, messages=messages) as stream:
            answers[number] = (await stream.get_final_message()).content[0].text

    async with anyio.create_task_group() as group:
        for number in range(12):
            group.start_soon(ask, number)
    assert answers == {number: f"echo: question {number}" for number in range(12)}
    assert fake_anthropic.unused_replies == 0


def test_env_points_a_spawned_product_at_the_fake(fake_anthropic: FakeAnthropic) -> None:
    env = fake_anthropic.env(HERMES_HOME="/tmp/h")
    assert env == {
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "HERMES_HOME": "/tmp/h",
    }
    assert fake_anthropic.base_url.startswith("http://127.0.0.1:")


def test_waiting_for_a_request_that_never_comes_fails_clearly(fake_anthropic: FakeAnthropic) -> None:
    with pytest.raises(AssertionError, match="only 0 arrived"):
        fake_anthropic.wait_for_request(1, timeout=0.05)
    with pytest.raises(AssertionError, match="no client disconnect"):
        fake_anthropic.wait_for_disconnect(timeout=0.05)


def test_split_evenly_keeps_every_character() -> None:
    assert split_evenly("abcdefg", 3) == ["ab", "cd", "efg"]
    assert split_evenly("ab", 5) == ["a", "b"]
    assert split_evenly("", 3) == []


# ----------------------------------------------------------------------------------------------------
# prompt-cache simulation

EPHEMERAL = {"type": "ephemeral"}
SYSTEM_TEXT = "You are Hermes, a careful coding agent. " * 40


def request_body(
    turns: list[str], *, system: str = SYSTEM_TEXT, marked_tail: int = 3, model: str = MODEL
) -> dict[str, Any]:
    """A conversation whose system block and last ``marked_tail`` messages carry cache breakpoints."""
    messages: list[dict[str, Any]] = []
    for number, text in enumerate(turns):
        block: dict[str, Any] = {"type": "text", "text": text}
        if number >= len(turns) - marked_tail:
            block["cache_control"] = EPHEMERAL
        messages.append({"role": "user" if number % 2 == 0 else "assistant", "content": [block]})
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": system, "cache_control": EPHEMERAL}],
        "messages": messages,
    }


def test_identical_prefix_is_read_from_the_cache() -> None:
    cache = PrefixCache()
    body = request_body(["read a.py", "done", "now b.py"])
    first = cache.account(body)
    second = cache.account(body)
    assert (first.cache_read_input_tokens, first.input_tokens) == (0, 0)
    assert first.cache_creation_input_tokens == first.total == estimate_input_tokens(body)
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (first.total, 0)
    assert second.read_share == 1.0


def test_growing_conversation_reads_the_previous_turn_and_writes_the_new_tail() -> None:
    cache = PrefixCache()
    turns = ["read a.py", "it has 3 lines", "now b.py"]
    cache.account(request_body(turns))
    grown = request_body([*turns, "b.py is empty", "thanks"])
    account = cache.account(grown)
    assert account.total == estimate_input_tokens(grown)
    assert account.cache_read_input_tokens == estimate_input_tokens(request_body(turns))
    assert account.cache_creation_input_tokens == account.total - account.cache_read_input_tokens
    assert account.input_tokens == 0


def test_a_change_early_in_the_prompt_misses() -> None:
    cache = PrefixCache()
    turns = ["read a.py", "ok", "now b.py"]
    cache.account(request_body(turns))
    account = cache.account(request_body(turns, system=SYSTEM_TEXT + " Today is Tuesday."))
    assert account.cache_read_input_tokens == 0
    assert account.cache_creation_input_tokens == account.total


def test_another_model_does_not_share_the_cache() -> None:
    cache = PrefixCache()
    cache.account(request_body(["hi"]))
    assert cache.account(request_body(["hi"], model="claude-other")).cache_read_input_tokens == 0


def test_no_breakpoints_means_no_caching() -> None:
    cache = PrefixCache()
    body = {"model": MODEL, "max_tokens": 10, "system": SYSTEM_TEXT, "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(2):
        account = cache.account(body)
        assert (account.cache_read_input_tokens, account.cache_creation_input_tokens) == (0, 0)
        assert account.input_tokens == estimate_input_tokens(body) > 0


def test_only_the_prefix_up_to_the_last_breakpoint_is_cached() -> None:
    cache = PrefixCache()
    body = request_body(["one", "two", "three", "four"], marked_tail=0)
    account = cache.account(body)
    system_tokens = prompt_blocks(body)[0].tokens
    assert account.cache_creation_input_tokens == system_tokens
    assert account.input_tokens == account.total - system_tokens


def test_all_four_breakpoints_are_honoured() -> None:
    cache = PrefixCache()
    turns = ["one", "two", "three", "four"]
    cache.account(request_body(turns, marked_tail=3))
    changed = request_body([*turns[:3], "FOUR, changed"], marked_tail=3)
    account = cache.account(changed)
    assert account.cache_read_input_tokens == estimate_input_tokens(request_body(turns[:3], marked_tail=0))
    assert account.cache_creation_input_tokens == prompt_blocks(changed)[-1].tokens


def test_top_level_cache_control_marks_the_last_block() -> None:
    cache = PrefixCache()
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "cache_control": EPHEMERAL,
        "messages": [{"role": "user", "content": "hi"}],
    }
    cache.account(body)
    assert cache.account(body).cache_read_input_tokens == estimate_input_tokens(body)


@pytest.mark.anyio
async def test_simulated_cache_usage_reaches_the_sdk() -> None:
    turns = ["read a.py", "ok", "now b.py"]
    with FakeAnthropic(simulate_cache=True) as fake:
        fake.script(text_reply("second"))
        fake.script_auxiliary(text_reply("first"), text_reply("third", usage=Usage(1, 2)))
        async with AsyncAnthropic(base_url=fake.base_url, api_key=FAKE_API_KEY, max_retries=0) as sdk:
            params: Any = request_body(turns)
            await sdk.messages.create(**params)
            async with sdk.messages.stream(**params) as stream:
                final = await stream.get_final_message()
            explicit = await sdk.messages.create(**params)
        assert fake.cache is not None
        assert final.usage.cache_read_input_tokens == estimate_input_tokens(fake.last_request) > 0
        assert (final.usage.cache_creation_input_tokens, final.usage.input_tokens) == (0, 0)
        assert (explicit.usage.input_tokens, explicit.usage.output_tokens) == (1, 2)
        assert len(fake.cache.accounts) == 3


def test_wire_event_order_includes_the_ping_after_the_first_block_start() -> None:
    reply = MessageReply([ThinkingBlock("hm"), TextBlock("hi")])
    names = [name for name, _ in stream_events(reply, message_id="msg_1", model=MODEL, usage=Usage(3, 4))]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


@pytest.mark.anyio
async def test_conversation_and_auxiliary_requests_take_from_their_own_scripts(
    fake_anthropic: FakeAnthropic, client: AsyncAnthropic
) -> None:
    fake_anthropic.script(text_reply("turn one"), text_reply("turn two"))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    assert fake_anthropic.unused_replies == 3
    first = await raw_events(client)
    title = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)  # arrives between turns
    second = await raw_events(client)
    assert title.content[0].text == "A title"
    deltas = [e.delta.text for events in (first, second) for e in events if e.type == "content_block_delta"]
    assert deltas == ["turn one", "turn two"]
    assert fake_anthropic.unused_replies == 0
    assert len(fake_anthropic.stream_requests) == 2 and len(fake_anthropic.auxiliary_requests) == 1
    with pytest.raises(anthropic.InternalServerError, match="auxiliary script exhausted"):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
