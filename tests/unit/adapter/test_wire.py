"""The stdio wire in-process: nesting refusal, id recovery, malformed input answered, framing, batching."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.adapter import wire
from acp_hermes.adapter.wire import (
    BATCH_BYTES,
    INVALID_REQUEST,
    MAX_NESTING,
    PARSE_ERROR,
    StdioTransport,
    too_deep,
    top_level_id,
)


class Recorder:
    """A writer that keeps every write (one entry per ``write`` call)."""

    def __init__(self, fail_on_close: bool = False) -> None:
        self.writes: list[bytes] = []
        self.closed = 0
        self._fail_on_close = fail_on_close

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed += 1
        if self._fail_on_close:
            raise BrokenPipeError("gone")

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in b"".join(self.writes).splitlines()]


def transport_over(data: bytes, limit: int = 2**16) -> tuple[StdioTransport, Recorder]:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    reader.feed_eof()
    writer = Recorder()
    return StdioTransport(reader, writer), writer


def nested(depth: int, inner: bytes = b"0") -> bytes:
    return b"[" * depth + inner + b"]" * depth


# -- too_deep ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (nested(MAX_NESTING), False),
        (nested(MAX_NESTING + 1), True),
        (b'{"a":' * (MAX_NESTING + 1) + b"1" + b"}" * (MAX_NESTING + 1), True),
        (b'"' + b"[" * 500 + b'"', False),  # brackets inside a string do not count
        (b'["\\"' + b"[" * 500 + b'"]', False),  # nor after an escaped quote in the same string
        (b"[]" * 1000, False),  # many brackets, never deep
        (b"[" * (MAX_NESTING + 1), True),  # unbalanced, but deep before it ends
    ],
    ids=["at-limit", "over-limit", "objects", "in-string", "escaped-quote", "flat", "unclosed"],
)
def test_too_deep(line: bytes, expected: bool) -> None:
    assert too_deep(line) is expected


def test_too_deep_honours_a_custom_limit() -> None:
    assert too_deep(nested(3), limit=2)
    assert not too_deep(nested(2), limit=2)


# -- top_level_id --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"x"}', 7),
        (b'{"id" : "abc"}', "abc"),
        (b'{"params":{"id":5},"id":9}', 9),  # a nested "id" is not the message's
        (b'{"params":' + nested(200) + b',"id":3}', 3),
        (b'{"id":1.5}', 1.5),
        (b'{"id":true}', None),
        (b'{"id":null}', None),
        (b'{"id":{"x":1}}', None),
        (b'{"method":"x"}', None),
        (b'{"id":', None),
        (b'{"id":"a\\"b"}', 'a"b'),
        (b"", None),
    ],
)
def test_top_level_id(line: bytes, expected: Any) -> None:
    assert top_level_id(line) == expected


def test_top_level_id_is_not_fooled_by_a_value_spelled_id() -> None:
    assert top_level_id(b'{"method":"id","id":2}') == 2


# -- receive: malformed input is answered and the transport keeps serving ------------------------


@pytest.mark.parametrize(
    ("line", "code", "reply_id", "details"),
    [
        (b"not json", PARSE_ERROR, None, None),
        (b'{"a":"\xff"}', PARSE_ERROR, None, None),
        (b"[1,2]", INVALID_REQUEST, None, "a message must be a JSON object"),
        (b'{"id":4}', INVALID_REQUEST, 4, "missing method"),
        (b"{}", INVALID_REQUEST, None, "missing method"),
        (b'{"params":{}}', INVALID_REQUEST, None, "missing method"),
        (b'{"id":"r1","method":5}', INVALID_REQUEST, "r1", "method must be a string"),
        (b'{"id":8,"method":"m","params":' + nested(MAX_NESTING + 5) + b"}", INVALID_REQUEST, 8,
         f"the message is nested deeper than {MAX_NESTING} levels"),
    ],
    ids=["garbage", "bad-utf8", "array", "id-only", "empty", "params-only", "method-int", "too-deep"],
)
@pytest.mark.anyio
async def test_malformed_input_is_answered_then_serving_continues(
    line: bytes, code: int, reply_id: Any, details: str | None
) -> None:
    transport, writer = transport_over(line + b'\n{"method":"session/cancel","params":{"sessionId":"s"}}\n')
    message = await transport.receive()
    assert message == {"method": "session/cancel", "params": {"sessionId": "s"}}
    [reply] = writer.messages()
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == reply_id
    assert reply["error"]["code"] == code
    if details is not None:
        assert reply["error"]["data"] == {"details": details}


@pytest.mark.parametrize("line", [b'{"jsonrpc":"2.0"}', b'{"method":5}'])
@pytest.mark.anyio
async def test_unanswerable_notifications_are_dropped_silently(line: bytes) -> None:
    transport, writer = transport_over(line + b"\n")
    assert await transport.receive() is None
    assert writer.writes == []


@pytest.mark.anyio
async def test_blank_lines_are_skipped_and_a_final_line_needs_no_newline() -> None:
    transport, _ = transport_over(b'\n   \r\n{"id":1,"result":{}}\n{"id":2,"result":null}')
    assert await transport.receive() == {"id": 1, "result": {}}
    assert await transport.receive() == {"id": 2, "result": None}
    assert await transport.receive() is None


@pytest.mark.anyio
async def test_a_line_longer_than_the_reader_limit_is_read_whole() -> None:
    message = {"id": 1, "method": "session/prompt", "params": {"text": "x" * 500}}
    transport, _ = transport_over(json.dumps(message).encode() + b"\n", limit=64)
    assert await transport.receive() == message


@pytest.mark.anyio
async def test_meta_keys_that_could_bind_parameters_are_dropped() -> None:
    request = {"id": 1, "method": "session/new",
               "params": {"cwd": "/safe", "_meta": {"cwd": "/etc", "zed.dev/x": 1, "terminal-auth": True}}}
    transport, _ = transport_over(json.dumps(request).encode() + b"\n")
    message = await transport.receive()
    assert message is not None
    assert message["params"] == {"cwd": "/safe", "_meta": {"zed.dev/x": 1, "terminal-auth": True}}


@pytest.mark.anyio
async def test_airs_meta_namespace_is_kept_beside_a_dropped_key() -> None:
    """``jetbrains`` names no handler's parameter: AIR's ``_meta.jetbrains.air.fork`` reaches the fork."""
    air = {"air": {"fork": {"version": 1, "messageId": "m1"}}}
    request = {"id": 1, "method": "session/fork",
               "params": {"sessionId": "s", "cwd": "/safe", "_meta": {"jetbrains": air, "cwd": "/etc"}}}
    transport, _ = transport_over(json.dumps(request).encode() + b"\n")
    message = await transport.receive()
    assert message is not None
    assert message["params"] == {"sessionId": "s", "cwd": "/safe", "_meta": {"jetbrains": air}}


@pytest.mark.anyio
async def test_an_extension_request_keeps_its_meta_whole() -> None:
    """The SDK hands an extension its params as one dict (nothing binds parameters): ``_session/steering``
    reads ``_meta.steering.idleBehavior`` there."""
    request = {"id": 1, "method": "_session/steering",
               "params": {"sessionId": "s", "_meta": {"steering": {"idleBehavior": "promptRequired"}}}}
    transport, _ = transport_over(json.dumps(request).encode() + b"\n")
    message = await transport.receive()
    assert message is not None
    assert message["params"] == request["params"]


@pytest.mark.anyio
async def test_eof_calls_on_eof_once_requests_were_answered() -> None:
    transport, _ = transport_over(b'{"id":1,"method":"initialize","params":{}}\n')
    gone: list[bool] = []
    transport.on_eof = lambda: gone.append(True)
    assert (await transport.receive() or {}).get("id") == 1
    await transport.send({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert await transport.receive() is None
    assert gone == [True]


@pytest.mark.anyio
async def test_eof_with_an_unanswered_request_waits_only_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "EOF_GRACE_SECONDS", 0)
    transport, _ = transport_over(b'{"id":"q","method":"session/prompt","params":{}}\n')
    await transport.receive()
    assert await asyncio.wait_for(transport.receive(), 2) is None


@pytest.mark.anyio
async def test_what_was_read_ahead_is_received_first_and_reading_goes_on_after_it() -> None:
    """The reception reads with ``read_message`` (the end of input says nothing to ``on_eof`` there)
    and hands back where the SDK goes on: a message, or a read still under way."""
    transport, _ = transport_over(b'{"id":1,"method":"a"}\n{"id":2,"method":"b"}\n{"id":3,"method":"c"}\n')
    gone: list[bool] = []
    transport.on_eof = lambda: gone.append(True)
    first = await transport.read_message()
    transport.hand_back(first)
    assert [(await transport.receive() or {}).get("id") for _ in range(2)] == [1, 2]
    transport.hand_back(asyncio.ensure_future(transport.read_message()))
    assert (await transport.receive() or {}).get("id") == 3
    assert await transport.read_message() is None and await transport.read_message() is None
    assert gone == []
    for request_id in (1, 2, 3):
        await transport.send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    transport.hand_back(None)  # the reception saw the end: the SDK's side reads it again
    assert await transport.receive() is None
    assert gone == [True]


# -- send ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_send_writes_compact_utf8_json_lines() -> None:
    transport, writer = transport_over(b"")
    await transport.send({"jsonrpc": "2.0", "method": "n", "params": {"text": "héllo ✓", "n": [1, 2]}})
    assert writer.writes == ['{"jsonrpc":"2.0","method":"n","params":{"text":"héllo ✓","n":[1,2]}}\n'.encode()]


@pytest.mark.anyio
async def test_notifications_are_batched_into_few_writes() -> None:
    transport, writer = transport_over(b"")
    payload = "x" * 1000
    messages = [{"method": "session/update", "params": {"i": i, "p": payload}} for i in range(600)]
    await transport.send_notifications(messages)
    assert 1 < len(writer.writes) <= 600 * 1100 // BATCH_BYTES + 1
    assert all(len(chunk) >= BATCH_BYTES for chunk in writer.writes[:-1])
    assert [m["params"]["i"] for m in writer.messages()] == list(range(600))


@pytest.mark.anyio
async def test_no_notifications_means_no_write() -> None:
    transport, writer = transport_over(b"")
    await transport.send_notifications([])
    assert writer.writes == []


@pytest.mark.anyio
async def test_close_is_idempotent_and_survives_a_broken_pipe() -> None:
    reader = asyncio.StreamReader()
    writer = Recorder(fail_on_close=True)
    transport = StdioTransport(reader, writer)
    await transport.close()
    await transport.close()
    assert writer.closed == 1


def test_file_writer_writes_through_to_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "log.jsonl"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    assert wire._is_regular_file(fd)
    file_writer = wire._FileWriter(fd)
    file_writer.write(b'{"a":1}\n')
    asyncio.run(file_writer.drain())
    file_writer.close()
    assert target.read_bytes() == b'{"a":1}\n'


def test_a_pipe_is_not_a_regular_file() -> None:
    read_end, write_end = os.pipe()
    try:
        assert not wire._is_regular_file(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


# -- a response too deep to parse fails the request it answers -----------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":3,"result":{"outcome":' + nested(200) + b"}}", True),
        (b'{"id":3,"error":' + nested(200) + b"}", True),
        (b'{"id":3,"method":"x","params":{"result":1}}', False),  # a request: a nested "result" is not its
        (b'{"result":' + nested(200) + b',"method":"x"}', False),  # a method after a deep value still counts
        (b'[{"id":3,"result":1}]', False),
        (b'{"id":3}', False),
    ],
)
def test_is_response(line: bytes, expected: bool) -> None:
    assert wire.is_response(line) is expected


@pytest.mark.anyio
async def test_a_response_too_deep_to_parse_fails_its_request_and_is_not_answered() -> None:
    line = b'{"jsonrpc":"2.0","id":12,"result":{"outcome":' + nested(MAX_NESTING + 5) + b"}}"
    transport, writer = transport_over(line + b"\n")
    message = await transport.receive()
    assert message is not None and message["id"] == 12 and "result" not in message
    assert message["error"]["code"] == INVALID_REQUEST
    assert writer.writes == []  # a response is never answered


@pytest.mark.anyio
async def test_a_response_too_deep_without_an_id_is_dropped() -> None:
    transport, writer = transport_over(b'{"result":' + nested(MAX_NESTING + 5) + b"}\n")
    assert await transport.receive() is None
    assert writer.writes == []


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 0, "result": {"text": "naïve — ✓ 🐍 \u2028 \\ \" \n\t", "n": [1, -2, 0], "ok": True,
                                           "none": None, "nested": {"a": {"b": []}}}},
    {"jsonrpc": "2.0", "id": "x", "error": {"code": -32602, "message": "\x00\x1f control"}},
], ids=["unicode and nesting", "control characters"])
def test_the_standard_library_writes_the_bytes_pydantic_core_writes(message: dict[str, Any]) -> None:
    """Answers written before the SDK has loaded use ``json``; later ones pydantic_core: the same bytes."""
    from pydantic_core import to_json

    assert wire._plain_json(message) == to_json(message)
