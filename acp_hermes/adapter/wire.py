"""The stdio wire: newline-delimited JSON-RPC on a protocol-only file descriptor.

At start-up the real stdout is duplicated for the protocol and fd 1 is pointed at stderr, so
nothing but ACP messages can ever reach the editor: not a stray ``print``, not a library's
warning, not a child process that inherits stdout. The transport also answers malformed
input the way JSON-RPC prescribes (``-32700``/``-32600`` with ``id: null``) instead of
silently dropping it, and keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import selectors
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

EOF_GRACE_SECONDS = 5.0
BATCH_BYTES = 256 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# No ACP message nests deeper than a dozen levels; a parser or validator walking thousands of
# levels recurses until it fails, so deeper input is refused before anything parses it.
MAX_NESTING = 64
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")


def _plain_json(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


# Compact UTF-8 JSON. pydantic_core's ``to_json`` writes the same bytes at a third of the cost — it
# matters for every streamed chunk and a long session/load replay — but importing it costs ~35 ms
# before the first answer; the standard library writes the answers given before the SDK has loaded
# (``use_fast_json``, once it has).
_encode: Callable[[Any], bytes] = _plain_json


def use_fast_json() -> None:
    """Write every message from now on with pydantic_core (called once it is imported whole)."""
    global _encode
    from pydantic_core import to_json

    _encode = to_json


def claim_stdout() -> int:
    """Reserve the real stdout for the protocol; return its fd. fd 1 becomes stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


class _FileWriter:
    """Writes to a regular file (``acp-hermes > log.jsonl``), which asyncio cannot treat as a pipe."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "wb", buffering=0)

    def write(self, data: bytes) -> None:
        self._file.write(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self._file.close()


def _is_regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _can_poll(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, socket or tty, yes; a regular file, a
    directory or a device such as /dev/null, no (epoll refuses them with EPERM, and asyncio would
    only report that from a callback, leaving the reader waiting for ever)."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Feed stdin the event loop cannot poll (a regular file, /dev/null) to ``reader`` from a thread.

    A read that fails (a directory on stdin) ends the input like EOF, with one line in the log.
    """

    def pump() -> None:
        try:
            with os.fdopen(os.dup(fd), "rb", buffering=0) as source:
                while chunk := source.read(65536):
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError as exc:
            log.error("stdin cannot be read (%s): treating it as closed", exc.strerror or exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()


async def open_streams(protocol_fd: int, limit: int) -> tuple[asyncio.StreamReader, Any]:
    """Async reader on stdin and writer on the protocol fd (pipes, sockets, ttys or plain files)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if sys.stdin is None:  # started with fd 0 closed: no request will ever come
        reader.feed_eof()
    elif _can_poll(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        _feed_from_thread(loop, reader, sys.stdin.fileno())
    if _is_regular_file(protocol_fd):
        return reader, _FileWriter(protocol_fd)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(protocol_fd, "wb", buffering=0)
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _error(code: int, message: str, data: Any = None, request_id: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def too_deep(line: bytes, limit: int = MAX_NESTING) -> bool:
    """Whether the arrays and objects of a JSON text nest deeper than ``limit`` (brackets inside
    strings do not count). Linear and mostly C-speed: a line with few brackets is answered from
    two counts."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    depth = 0
    for bracket in _STRING.sub(b"", line).translate(None, _NOT_BRACKETS):
        depth += 1 if bracket in b"[{" else -1
        if depth > limit:
            return True
    return False


def _top_level(line: bytes) -> Iterator[tuple[str, bytes]]:
    """The keys of a JSON object, each with its value's first token, read without parsing it (for
    one too deep to parse). Stops where the text stops looking like an object."""
    depth = 0
    previous = b""
    tokens = _TOKEN.finditer(line)
    for token in tokens:
        text = token.group(0)
        is_key = previous in (b"{", b",")  # a string there is a key; after ':' it is a value
        previous = text
        if text in (b"[", b"{"):
            depth += 1
        elif text in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and is_key and text.startswith(b'"'):
            colon, value = next(tokens, None), next(tokens, None)
            if colon is None or colon.group(0) != b":" or value is None:
                return
            previous = value.group(0)
            if previous in (b"[", b"{"):
                depth += 1
            try:
                key = json.loads(text)
            except ValueError:
                continue
            yield key, previous


def top_level_id(line: bytes) -> Any:
    """The ``id`` of a JSON-RPC message read without parsing it (for one too deep to parse), or None."""
    for key, value in _top_level(line):
        if key == "id":
            try:
                found = json.loads(value)
            except ValueError:
                return None
            return found if isinstance(found, (str, int, float)) and not isinstance(found, bool) else None
    return None


def is_response(line: bytes) -> bool:
    """Whether a JSON-RPC message read without parsing it is a response: an object with a
    ``result`` or an ``error`` and no ``method``."""
    if not line.lstrip().startswith(b"{"):
        return False
    keys = {key for key, _ in _top_level(line)}
    return "method" not in keys and bool(keys & {"result", "error"})


_META_KEPT = frozenset({"jetbrains"})


def _binds(key: Any) -> bool:
    """Whether a ``_meta`` key could bind a handler's parameter once the SDK merges it in."""
    return isinstance(key, str) and key.isidentifier() and key not in _META_KEPT


def _keep_meta_out_of_arguments(message: dict[str, Any]) -> None:
    """Drop ``params._meta`` keys that could bind a handler's parameters.

    The SDK merges ``_meta`` into the keyword arguments of the handler *after* validating the
    params, so ``{"cwd": "/safe", "_meta": {"cwd": "/etc"}}`` would run with ``/etc``. Keys that
    can name a parameter are identifiers; namespaced keys (``zed.dev/x``, ``terminal-auth``) stay, and
    so do the namespaces of ``_META_KEPT``, which name no handler's parameter (AIR's ``jetbrains``:
    a fork at a message, ``adapter.timeline``).
    """
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and any(_binds(key) for key in meta):
        params["_meta"] = {key: value for key, value in meta.items() if not _binds(key)}  # type: ignore[index]
        log.debug("dropped _meta keys that could override the params of %s", message.get("method"))


class StdioTransport:
    """An ``acp`` Transport over asyncio streams that answers malformed input."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self._reader = reader
        self._writer = writer
        # asyncio's lock: its uncontended acquire does not yield, so a response is written
        # in the same step its handler returns (HermesAgent.spawn relies on that order).
        self._lock = asyncio.Lock()
        self._closed = False
        self._unanswered: set[Any] = set()
        self._all_answered = asyncio.Event()
        self._all_answered.set()
        self._first: dict[str, Any] | asyncio.Future[dict[str, Any] | None] | None = None
        self.on_eof: Callable[[], None] | None = None  # the client went away: stop what runs for it

    async def send(self, message: dict[str, Any]) -> None:
        data = _encode(message) + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()
        if "method" not in message and self._unanswered:
            self._unanswered.discard(message.get("id"))
            if not self._unanswered:
                self._all_answered.set()

    async def send_notifications(self, messages: Iterable[dict[str, Any]]) -> None:
        """Write many notifications in a few large writes rather than one write each: a
        session/load replays thousands, and the writes cost more than the JSON."""
        pending: list[bytes] = []
        size = 0
        for message in messages:
            data = _encode(message) + b"\n"
            pending.append(data)
            size += len(data)
            if size >= BATCH_BYTES:
                await self._write_all(b"".join(pending))
                pending.clear()
                size = 0
        if pending:
            await self._write_all(b"".join(pending))

    async def _write_all(self, data: bytes) -> None:
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    def hand_back(self, first: dict[str, Any] | asyncio.Future[dict[str, Any] | None] | None) -> None:
        """What ``receive`` returns next, before reading on: a message read ahead, or a read still
        under way (``adapter.reception`` reads before the SDK is loaded)."""
        self._first = first

    async def receive(self) -> dict[str, Any] | None:
        first, self._first = self._first, None
        if isinstance(first, asyncio.Future):
            message = await first
        else:
            message = first if first is not None else await self.read_message()
        if message is None:
            if self.on_eof is not None:
                self.on_eof()
            await self._finish_in_flight()
        return message

    async def read_message(self) -> dict[str, Any] | None:
        """The next message, or None at the end of input (and on every call after it)."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            message = await self._decode(line)
            if message is not None:
                if "method" in message and "id" in message:
                    self._unanswered.add(message["id"])
                    self._all_answered.clear()
                return message

    async def _finish_in_flight(self) -> None:
        """At end of input, give requests already received a moment to be answered."""
        if self._unanswered:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_answered.wait(), EOF_GRACE_SECONDS)

    async def _read_line(self) -> bytes | None:
        chunks: list[bytes] = []
        while True:
            try:
                chunk = await self._reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                chunks.append(await self._reader.readexactly(exc.consumed))
                continue
            except asyncio.IncompleteReadError as exc:
                chunks.append(exc.partial)
                data = b"".join(chunks)
                return data if data.strip() else None
            chunks.append(chunk)
            return b"".join(chunks)

    async def _decode(self, line: bytes) -> dict[str, Any] | None:
        """The message, or None after answering (or logging) why it cannot be served."""
        if too_deep(line):
            if is_response(line):
                # The client's answer to one of our requests: nothing is sent back (a response is
                # never answered), but the request it answers must not wait for ever. It fails.
                request_id = top_level_id(line)
                log.warning("response to request %r nested deeper than %d levels: the request fails",
                            request_id, MAX_NESTING)
                if request_id is None:
                    return None
                unread = {"details": f"the answer was nested deeper than {MAX_NESTING} levels and could not be read"}
                return _error(INVALID_REQUEST, "Invalid Request", unread, request_id)
            details = {"details": f"the message is nested deeper than {MAX_NESTING} levels"}
            log.warning("JSON-RPC message nested deeper than %d levels refused", MAX_NESTING)
            await self.send(_error(INVALID_REQUEST, "Invalid Request", details, top_level_id(line)))
            return None
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            log.warning("malformed JSON on stdin (%s): %.200r", exc, line)
            await self.send(_error(PARSE_ERROR, "Parse error", {"details": str(exc)}))
            return None
        if not isinstance(message, dict):
            log.warning("JSON-RPC message is not an object: %.200r", line)
            await self.send(_error(INVALID_REQUEST, "Invalid Request", {"details": "a message must be a JSON object"}))
            return None
        has_id = "id" in message
        method = message.get("method")
        if method is None and not (has_id and ("result" in message or "error" in message)):
            log.warning("JSON-RPC message with neither method nor result: %.200r", line)
            if has_id or "params" in message or not message:
                await self.send(_error(INVALID_REQUEST, "Invalid Request", {"details": "missing method"},
                                       message.get("id")))
            return None
        if method is not None and not isinstance(method, str):
            if has_id:
                await self.send(_error(INVALID_REQUEST, "Invalid Request", {"details": "method must be a string"},
                                       message.get("id")))
            return None
        if method is not None and not method.startswith("_"):  # an extension gets its params whole, as a dict
            _keep_meta_out_of_arguments(message)
        return message

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except Exception:  # the pipe may already be gone
            log.debug("closing the protocol stream failed", exc_info=True)

