"""A scripted stand-in for the Anthropic Messages API, served over real HTTP and SSE on 127.0.0.1.

Tests and the offline demo drive the product through the official ``anthropic`` SDK exactly as in
production; only the far end of the socket is scripted. A *responder* turns each request into a
reply: a message (streamed as the real API's SSE events when the request asks for ``stream``, else a
JSON ``Message``), an HTTP error with the API's error body, or a dropped connection. The server
records every request and notices clients that hang up mid-stream, so tests can check that a cancel
really closed the model stream. How it reads a request as the API would (cacheable blocks, token
estimates, the 400s) is ``testing.request_checks``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from acp_hermes.testing.request_checks import estimate_input_tokens, estimate_tokens, request_problem, sealed

logger = logging.getLogger(__name__)

MESSAGES_PATH = "/v1/messages"

StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "pause_turn", "model_context_window_exceeded"
]

# error.type the real API uses for each status; anything else 5xx is "api_error".
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def split_evenly(text: str, pieces: int) -> list[str]:
    """Cut ``text`` into ``pieces`` nearly equal parts at plain character offsets (mid-word, mid-string)."""
    if not text:
        return []
    count = max(1, min(pieces, len(text)))
    bounds = [len(text) * i // count for i in range(count + 1)]
    return [text[start:end] for start, end in pairwise(bounds)]


# ----------------------------------------------------------------------------------------------------
# What a reply is made of


@dataclass(frozen=True)
class TextBlock:
    """Assistant text, streamed as ``chunks`` ``text_delta`` events, then one ``citations_delta`` per
    citation (a web search result it cites: ``(title, url, cited text)``)."""

    text: str
    chunks: int = 1
    citations: tuple[tuple[str, str, str], ...] = ()

    def opening(self) -> dict[str, Any]:
        return {"type": "text", "text": ""}

    def deltas(self) -> list[dict[str, Any]]:
        pieces = [{"type": "text_delta", "text": piece} for piece in split_evenly(self.text, self.chunks)]
        return pieces + [{"type": "citations_delta", "citation": citation} for citation in self._citations()]

    def _citations(self) -> list[dict[str, Any]]:
        return [{"type": "web_search_result_location", "cited_text": cited, "url": url, "title": title,
                 "encrypted_index": sealed("index", url)} for title, url, cited in self.citations]

    def complete(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "text", "text": self.text}
        if self.citations:
            block["citations"] = self._citations()
        return block


@dataclass(frozen=True)
class ThinkingBlock:
    """Extended thinking: ``thinking_delta`` pieces, then one ``signature_delta`` as the API sends it."""

    text: str
    signature: str = "fake-thinking-signature"
    chunks: int = 1

    def opening(self) -> dict[str, Any]:
        return {"type": "thinking", "thinking": "", "signature": ""}

    def deltas(self) -> list[dict[str, Any]]:
        pieces = split_evenly(self.text, self.chunks)
        return [{"type": "thinking_delta", "thinking": piece} for piece in pieces] + [
            {"type": "signature_delta", "signature": self.signature}
        ]

    def complete(self) -> dict[str, Any]:
        return {"type": "thinking", "thinking": self.text, "signature": self.signature}


@dataclass(frozen=True)
class ToolUseBlock:
    """A tool call whose JSON input arrives in ``chunks`` ``input_json_delta`` pieces cut anywhere."""

    id: str
    name: str
    input: Mapping[str, Any]
    chunks: int = 1

    def opening(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": {}}

    def deltas(self) -> list[dict[str, Any]]:
        encoded = json.dumps(dict(self.input), ensure_ascii=False)
        return [{"type": "input_json_delta", "partial_json": piece} for piece in split_evenly(encoded, self.chunks)]

    def complete(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True)
class ServerToolUseBlock:
    """A tool the API runs itself (``web_search``, ``web_fetch``), its input streamed like a tool call's."""

    id: str
    name: str
    input: Mapping[str, Any]

    def opening(self) -> dict[str, Any]:
        return {"type": "server_tool_use", "id": self.id, "name": self.name, "input": {}}

    def deltas(self) -> list[dict[str, Any]]:
        return [{"type": "input_json_delta", "partial_json": json.dumps(dict(self.input), ensure_ascii=False)}]

    def complete(self) -> dict[str, Any]:
        return {"type": "server_tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True)
class WebSearchResultBlock:
    """The results of a ``web_search`` call, whole at its start as the API sends them: ``(title, url)``
    pairs, or an ``error_code``."""

    tool_use_id: str
    results: tuple[tuple[str, str], ...] = ()
    error_code: str | None = None

    def opening(self) -> dict[str, Any]:
        return self.complete()

    def deltas(self) -> list[dict[str, Any]]:
        return []

    def complete(self) -> dict[str, Any]:
        content: Any = (
            {"type": "web_search_tool_result_error", "error_code": self.error_code} if self.error_code else
            [{"type": "web_search_result", "title": title, "url": url, "encrypted_content": sealed("content", url),
              "page_age": "2 days ago"} for title, url in self.results]
        )
        return {"type": "web_search_tool_result", "tool_use_id": self.tool_use_id, "content": content}


@dataclass(frozen=True)
class WebFetchResultBlock:
    """The page a ``web_fetch`` call read, whole at its start as the API sends it."""

    tool_use_id: str
    url: str
    title: str
    text: str

    def opening(self) -> dict[str, Any]:
        return self.complete()

    def deltas(self) -> list[dict[str, Any]]:
        return []

    def complete(self) -> dict[str, Any]:
        document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": self.text},
                    "title": self.title}
        return {"type": "web_fetch_tool_result", "tool_use_id": self.tool_use_id,
                "content": {"type": "web_fetch_result", "url": self.url, "content": document,
                            "retrieved_at": "2026-11-26T12:00:00Z"}}


ContentBlock = (TextBlock | ThinkingBlock | ToolUseBlock | ServerToolUseBlock | WebSearchResultBlock
                | WebFetchResultBlock)


@dataclass(frozen=True)
class Usage:
    """Token counts as the API reports them; input_tokens excludes the cached parts."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    web_search_requests: int = 0

    def wire(self, *, output_tokens: int | None = None) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens if output_tokens is None else output_tokens,
        }
        if self.web_search_requests:
            wire["server_tool_use"] = {"web_search_requests": self.web_search_requests, "web_fetch_requests": 0}
        return wire


@dataclass(frozen=True)
class StreamFailure:
    """An ``error`` event sent after ``after_events`` stream events, ending the stream (as the API does)."""

    after_events: int
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class StreamCut:
    """The stream stops after ``after_events`` events with no ``message_stop``: the response simply
    ends (``drop=False``) or the connection is dropped mid-response (``drop=True``)."""

    after_events: int
    drop: bool = False


@dataclass(frozen=True)
class MessageReply:
    """A model answer; streamed or returned whole depending on the request's ``stream`` flag.

    ``usage=None`` estimates it from the request and the content. ``event_delay`` (seconds between SSE
    events) makes a slow stream for cancel tests; ``failure`` injects a mid-stream error event and
    ``cut`` ends the stream early.
    """

    content: Sequence[ContentBlock]
    stop_reason: StopReason | None = None
    stop_sequence: str | None = None
    usage: Usage | None = None
    model: str | None = None
    event_delay: float = 0.0
    ping: bool = True
    failure: StreamFailure | None = None
    cut: StreamCut | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # sent with the answer (rate-limit headers)

    def resolved_stop_reason(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(block, ToolUseBlock) for block in self.content) else "end_turn"


@dataclass(frozen=True)
class HttpError:
    """An error status with the API's JSON error body and optional retry headers."""

    status: int
    message: str = ""
    error_type: str | None = None
    retry_after: float | None = None
    retry_after_ms: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self, request_id: str) -> dict[str, Any]:
        error_type = (
            self.error_type
            or ERROR_TYPES.get(self.status)
            or ("api_error" if self.status >= 500 else "invalid_request_error")
        )
        message = self.message or f"fake model: HTTP {self.status}"
        return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}

    def all_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.retry_after is not None:
            headers["retry-after"] = _number_text(self.retry_after)
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = _number_text(self.retry_after_ms)
        return headers


@dataclass(frozen=True)
class DropConnection:
    """Close the connection without answering: the client sees a connection error."""


@dataclass(frozen=True)
class RawBody:
    """A 200 response that is not the API's: a proxy's HTML page, say."""

    body: bytes = b"<html><body><h1>Welcome to the captive portal</h1></body></html>"
    content_type: str = "text/html; charset=utf-8"


Reply = MessageReply | HttpError | DropConnection | RawBody


@dataclass(frozen=True)
class ModelRequest:
    """One HTTP request as the server received it; ``index`` counts from 0 in arrival order."""

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    peer: tuple[str, int]

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


Responder = Callable[[ModelRequest], Reply]


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def estimate_output_tokens(content: Sequence[ContentBlock]) -> int:
    return max(1, sum(estimate_tokens(json.dumps(block.complete(), ensure_ascii=False)) for block in content))


def default_usage(body: Any, content: Sequence[ContentBlock]) -> Usage:
    """Usage for a reply that did not script one: everything is uncached input."""
    input_tokens = estimate_input_tokens(body) if isinstance(body, Mapping) else 0
    return Usage(input_tokens=input_tokens, output_tokens=estimate_output_tokens(content))


# ----------------------------------------------------------------------------------------------------
# Turning a reply into bytes


def message_json(reply: MessageReply, *, message_id: str, model: str, usage: Usage) -> dict[str, Any]:
    """The non-streamed ``Message`` body."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or model,
        "content": [block.complete() for block in reply.content],
        "stop_reason": reply.resolved_stop_reason(),
        "stop_sequence": reply.stop_sequence,
        "usage": usage.wire(),
    }


def stream_events(
    reply: MessageReply, *, message_id: str, model: str, usage: Usage
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events (name, data) the API sends for ``reply``, including an injected failure."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": reply.model or model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage.wire(output_tokens=1),
                },
            },
        )
    ]
    for index, block in enumerate(reply.content):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block.opening()})
        )
        if index == 0 and reply.ping:
            events.append(("ping", {"type": "ping"}))
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in block.deltas()
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.resolved_stop_reason(), "stop_sequence": reply.stop_sequence},
                "usage": usage.wire(),
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    if reply.failure is not None:
        failure = reply.failure
        error = {"type": "error", "error": {"type": failure.error_type, "message": failure.message}}
        events = [*events[: failure.after_events], ("error", error)]
    return events


def encode_sse(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


# ----------------------------------------------------------------------------------------------------
# The server


class ScriptedModelServer:
    """Serves ``POST /v1/messages`` on an ephemeral 127.0.0.1 port from a background daemon thread."""

    def __init__(self, responder: Responder, *, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self._responder = responder
        self._host = host
        self._tls = tls  # a server context: HTTPS, as the real API is
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._changed = threading.Condition()
        self._requests: list[ModelRequest] = []
        self._disconnects: list[int] = []
        self._connections: set[socket.socket] = set()
        self._closing = threading.Event()

    # lifecycle

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        self._closing.clear()
        self._httpd = _HTTPServer((self._host, 0), _Handler, self)
        if self._tls is not None:
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        logger.debug("scripted model listening on %s", self.base_url)
        return self

    def close(self) -> None:
        if self._httpd is None:
            return
        self._closing.set()
        self._httpd.shutdown()
        with self._changed:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("scripted model server is not running")
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://{self._host}:{self._httpd.server_port}"

    # what happened

    @property
    def requests(self) -> list[ModelRequest]:
        with self._changed:
            return list(self._requests)

    @property
    def disconnects(self) -> list[int]:
        """Indices of requests whose client went away before the stream ended."""
        with self._changed:
            return list(self._disconnects)

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self._requests) >= count, timeout)

    def wait_for_disconnects(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self._disconnects) >= count, timeout)

    # called from handler threads

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._changed:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _record(
        self, method: str, path: str, headers: Mapping[str, str], body: Any, peer: tuple[str, int]
    ) -> ModelRequest:
        with self._changed:
            request = ModelRequest(len(self._requests), method, path, dict(headers), body, peer)
            self._requests.append(request)
            self._changed.notify_all()
        return request

    def _note_disconnect(self, request: ModelRequest) -> None:
        if self._closing.is_set():
            return
        logger.info("scripted model: client went away during request %d", request.index)
        with self._changed:
            self._disconnects.append(request.index)
            self._changed.notify_all()

    def _reply_for(self, request: ModelRequest, body_error: str | None) -> Reply:
        if request.method != "POST" or urlsplit(request.path).path != MESSAGES_PATH:
            return HttpError(404, f"fake model: no route for {request.method} {request.path}")
        problem = body_error or request_problem(request.body)
        if problem is not None:
            return HttpError(400, problem)
        try:
            reply = self._responder(request)
        except Exception as exc:
            logger.exception("scripted model: responder failed on request %d", request.index)
            return HttpError(500, f"fake model: responder failed: {exc!r}", headers={"x-should-retry": "false"})
        if not isinstance(reply, (MessageReply, HttpError, DropConnection, RawBody)):
            return HttpError(500, f"fake model: responder returned {reply!r}", headers={"x-should-retry": "false"})
        return reply


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: ScriptedModelServer
    ) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request is routine here (cancel tests), not an error to print."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            logger.debug("client %s went away", client_address)
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each SSE event goes out at once, as from the real API (no 40 ms stalls)
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("scripted model %s: " + format, self.address_string(), *args)

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def _handle(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body: Any = None
        body_error: str | None = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as exc:
                body_error = f"request body is not valid JSON: {exc}"
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = owner._record(self.command, self.path, headers, body, self.client_address[:2])
        reply = owner._reply_for(request, body_error)
        request_id = f"req_scripted_{request.index:04d}"
        if isinstance(reply, DropConnection):
            logger.debug("scripted model: dropping connection for request %d", request.index)
            self.close_connection = True
        elif isinstance(reply, HttpError):
            self._send_json(reply.status, reply.body(request_id), request_id, reply.all_headers())
        elif isinstance(reply, RawBody):
            self.send_response(200)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self._write(reply.body)
        else:
            self._send_message(reply, request, request_id)

    def _send_json(self, status: int, payload: Any, request_id: str, headers: Mapping[str, str]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", request_id)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self._write(data)

    def _send_message(self, reply: MessageReply, request: ModelRequest, request_id: str) -> None:
        model = request.body.get("model") or "claude-scripted"
        usage = reply.usage or default_usage(request.body, reply.content)
        message_id = f"msg_scripted_{request.index:04d}"
        if not request.stream:
            self._send_json(200, message_json(reply, message_id=message_id, model=model, usage=usage), request_id,
                            reply.headers)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", request_id)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        events = stream_events(reply, message_id=message_id, model=model, usage=usage)
        if reply.cut is not None:
            events = events[: reply.cut.after_events]
        if self._stream(events, reply.event_delay) and not (reply.cut is not None and reply.cut.drop):
            self._write(b"0\r\n\r\n")
        else:
            self.close_connection = True
            self.server.owner._note_disconnect(request)

    def _stream(self, events: Iterable[tuple[str, dict[str, Any]]], delay: float) -> bool:
        """Send every event as one HTTP chunk; False as soon as the client has gone away."""
        for number, (name, data) in enumerate(events):
            if number and delay > 0 and self._peer_closed_within(delay):
                return False
            if self._peer_closed_within(0) or self.server.owner._closing.is_set():
                return False
            payload = encode_sse(name, data)
            if not self._write(f"{len(payload):X}\r\n".encode() + payload + b"\r\n"):
                return False
        return True

    def _peer_closed_within(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the client to hang up (EOF or reset on the socket)."""
        self.connection.settimeout(max(0.0, timeout))
        try:
            # Peeked on the socket beneath, as TLS refuses to peek: the hang-up is seen there either way.
            peeked: bytes = socket.socket.recv(self.connection, 1, socket.MSG_PEEK)
            return peeked == b""
        except (TimeoutError, BlockingIOError):
            return False
        except OSError:
            return True
        finally:
            self.connection.settimeout(None)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            return False
        return True
