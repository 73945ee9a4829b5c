"""The Anthropic provider: request building, prompt-cache breakpoints, streaming, retries, usage.

It is also the one place that turns the core's typed conversation (``model.messages``) into the
Messages API's JSON and back: requests, streamed answers, and the payloads the SessionDB stores (which
keep the API's form, so sessions stored by any build load unchanged).

The ``anthropic`` SDK is imported on first use only, so answering ``initialize`` and
``session/new`` never pays for it, and lazily (``load_sdk``): its packages' ``__init__`` files,
which re-export every type of the API, run only for the names used, so the client and the
streaming code cost ~0.3 s of CPU instead of ~0.9 s. The SDK's own retries are off: ours are
abortable by cancel, honour ``retry-after`` and never repeat a stream the user already saw.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.config import Settings
from acp_hermes.model.lazy_packages import InitIndex, lazy_packages
from acp_hermes.model.messages import (
    Block,
    FetchedPage,
    Image,
    Message,
    Other,
    SearchHit,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from acp_hermes.model.rate_limits import rate_limits
from acp_hermes.model.tls import TlsContext
from acp_hermes.model.types import (
    Completed,
    ModelError,
    ModelRequest,
    ServerToolsRejected,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseReady,
    Usage,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

log = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
MAX_CACHE_BREAKPOINTS = 4
_MAX_RETRY_AFTER = 60.0
_UNCACHEABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def load_sdk(index: InitIndex | None = None) -> None:
    """Make the SDK's packages lazy (``model.lazy_packages``, their ``__init__`` files read through
    ``index``) before anything imports it; a no-op once it is imported, this way or the normal way (a
    test, a tool that imported it first)."""
    if lazy_packages("anthropic", index):
        import anthropic

        anthropic._setup_logging()  # what its __init__ does besides re-exporting: ANTHROPIC_LOG


# -- the conversation on the wire, both ways ------------------------------------------------------


def block_to_wire(block: Block) -> dict[str, Any]:
    """``block`` as the Messages API writes it: as it came, when it came from there or from a row."""
    if block.raw is not None:
        return block.raw
    return _canonical(block)


def _canonical(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        if block.redacted:
            return {"type": "redacted_thinking", "data": block.text}
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResult):
        content = block.content if isinstance(block.content, str) else blocks_to_wire(block.content)
        wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": content}
        if block.is_error:
            wire["is_error"] = True
        return wire
    if isinstance(block, Image):
        source = ({"type": "url", "url": block.url} if block.url else
                  {"type": "base64", "media_type": block.media_type, "data": block.data})
        return {"type": "image", "source": source}
    if isinstance(block, ServerToolUse):
        return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": block.input}
    return block.raw  # ServerToolResult, Other: only ever as they came


def block_from_wire(data: dict[str, Any]) -> Block:
    """A block of the Messages API (streamed, or read back from a stored payload) in the core's terms.

    It keeps ``data`` as its ``raw`` unless its own fields write it again exactly (the same keys in the
    same order, values of the same types): one written the API's way by the agent comes back equal to
    the block it was written from."""
    kind = data.get("type")
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is not None:
        return reader(data)
    if isinstance(kind, str) and kind.endswith("_tool_result"):  # web_search_tool_result, web_fetch_tool_result
        return _server_result(data, kind.removesuffix("_tool_result"))
    return Other(data)


def _text(data: dict[str, Any]) -> Block:
    text = data.get("text")
    if isinstance(text, str) and tuple(data) == ("type", "text"):
        return Text(text)
    return Text(str(text or ""), data)  # citations, another order: kept as they came


def _thinking(data: dict[str, Any]) -> Block:
    text, signature = data.get("thinking"), data.get("signature")
    if isinstance(text, str) and isinstance(signature, str) and tuple(data) == ("type", "thinking", "signature"):
        return Thinking(text, signature)
    return Thinking(str(text or ""), str(signature or ""), raw=data)


def _redacted(data: dict[str, Any]) -> Block:
    text = data.get("data")
    if isinstance(text, str) and tuple(data) == ("type", "data"):
        return Thinking(text, redacted=True)
    return Thinking(str(text or ""), redacted=True, raw=data)


def _call(data: dict[str, Any]) -> Block:
    made = ToolUse if data.get("type") == "tool_use" else ServerToolUse
    call_id, name, arguments = data.get("id"), data.get("name"), data.get("input")
    if not isinstance(arguments, dict):  # the API would refuse it: it goes as {} (in the same place)
        return made(str(call_id), str(name), {}, {**data, "input": {}})
    if isinstance(call_id, str) and isinstance(name, str) and tuple(data) == ("type", "id", "name", "input"):
        return made(call_id, name, arguments)
    return made(str(call_id), str(name), arguments, data)


def _result(data: dict[str, Any]) -> Block:
    call_id, content, is_error = data.get("tool_use_id"), data.get("content"), data.get("is_error")
    if isinstance(content, str) and isinstance(call_id, str):
        keys = tuple(data)
        if keys == ("type", "tool_use_id", "content"):
            return ToolResult(call_id, content)
        if keys == ("type", "tool_use_id", "content", "is_error") and is_error is True:
            return ToolResult(call_id, content, True)
    inner: str | tuple[Block, ...] = (blocks_from_wire(content) if isinstance(content, list)
                                      else content if isinstance(content, str) else str(content or ""))
    return ToolResult(str(call_id), inner, bool(is_error), data)


def _image(data: dict[str, Any]) -> Block:
    source = data.get("source")
    if not isinstance(source, dict) or tuple(data) != ("type", "source"):
        return Other(data)
    keys = tuple(source)
    if keys == ("type", "url") and source["type"] == "url" and isinstance(source["url"], str):
        return Image(url=source["url"])
    if (keys == ("type", "media_type", "data") and source["type"] == "base64"
            and isinstance(source["media_type"], str) and isinstance(source["data"], str)):
        return Image(source["media_type"], source["data"])
    return Other(data)  # an image of a kind the agent never makes: kept whole


_READERS: dict[str, Callable[[dict[str, Any]], Block]] = {
    "text": _text, "thinking": _thinking, "redacted_thinking": _redacted, "tool_use": _call,
    "server_tool_use": _call, "tool_result": _result, "image": _image,
}


def _server_result(data: dict[str, Any], tool: str) -> ServerToolResult:
    """What a server tool's result block says, for the agent to show; the block itself goes back as it came."""
    call_id = str(data.get("tool_use_id"))
    content = data.get("content")
    if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        return ServerToolResult(call_id, tool, data, error_code=str(content.get("error_code") or "unknown"))
    if data.get("type") == "web_search_tool_result":
        hits = tuple(SearchHit(str(item.get("title") or item.get("url") or ""), str(item.get("url") or ""))
                     for item in content if isinstance(item, dict)) if isinstance(content, list) else ()
        return ServerToolResult(call_id, tool, data, hits=hits)
    page = content if isinstance(content, dict) else {}
    url = str(page.get("url") or "")
    document = page.get("content")
    if not isinstance(document, dict):
        document = {}
    source = document.get("source")
    text = source.get("data") if isinstance(source, dict) and source.get("type") == "text" else None
    return ServerToolResult(call_id, tool, data, page=FetchedPage(url, str(document.get("title") or url),
                                                                  text if isinstance(text, str) else None))


def blocks_to_wire(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    return [block_to_wire(block) for block in blocks]


def blocks_from_wire(content: Any) -> tuple[Block, ...]:
    """A message's content (a list of blocks, or plain text) in the core's terms; what is not a block
    is left out (the API would refuse it)."""
    if isinstance(content, str):
        return (Text(content),) if content else ()
    return tuple(block_from_wire(block) for block in content or () if isinstance(block, dict))


def message_to_wire(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": blocks_to_wire(message.blocks)}


def messages_to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [message_to_wire(message) for message in messages]


def message_from_wire(data: dict[str, Any]) -> Message:
    return Message(str(data.get("role")), blocks_from_wire(data.get("content")))


def _wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as the API's messages, new dicts and lists (the history itself is never altered),
    neighbours of the same role (left by a cancelled turn) joined into one."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content = [block.raw if block.raw is not None else _canonical(block) for block in message.blocks]
        if out and out[-1]["role"] == message.role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": message.role, "content": content})
    return out


def _with_breakpoints(system: str, messages: list[dict[str, Any]], ttl: str) -> list[dict[str, Any]]:
    """``cache_control`` on the system prompt and on the last cacheable block of each of the last
    messages, four in all: set on copies of those blocks, in ``messages``' own (new) lists. The
    system prompt's blocks."""
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl == "1h":
        marker["ttl"] = "1h"
    system_blocks = [{"type": "text", "text": system, "cache_control": dict(marker)}] if system else []
    budget = MAX_CACHE_BREAKPOINTS - len(system_blocks)
    for message in reversed(messages):
        if budget == 0:
            break
        blocks = message["content"]
        for index in range(len(blocks) - 1, -1, -1):
            block = blocks[index]
            if not _cacheable(block):
                continue
            blocks[index] = {**block, "cache_control": dict(marker)}
            budget -= 1
            break
    return system_blocks


def _cacheable(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return kind not in _UNCACHEABLE_BLOCKS and not (kind == "text" and not block.get("text"))


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The Messages API request for ``request``: cache breakpoints placed, same-role neighbours
    merged, the thinking budget added on top of the output budget. The history is not altered."""
    messages = _wire_messages(request.messages)
    system = _with_breakpoints(request.system, messages, request.cache_ttl)
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        params["system"] = system
    if request.tools:
        params["tools"] = list(request.tools)
    if request.thinking_budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
        params["max_tokens"] = request.max_tokens + request.thinking_budget
    return params


def token_estimate(params: dict[str, Any]) -> int:
    """About four characters a token over the whole request body (system, messages, tools): for the
    DEBUG log, which names counts and sizes and never a message's text."""
    return len(json.dumps(params, ensure_ascii=False, default=str)) // 4


def _log_request(params: dict[str, Any], attempt: int, *, streamed: bool) -> None:
    if log.isEnabledFor(logging.DEBUG):
        thinking = params.get("thinking")
        log.debug(
            "model request%s: model %s, %d messages, %d tools, ~%d tokens in (estimate), max_tokens %d%s%s",
            "" if streamed else " (not streamed)", params["model"], len(params["messages"]),
            len(params.get("tools", ())), token_estimate(params), params["max_tokens"],
            f", thinking budget {thinking['budget_tokens']}" if thinking else "",
            f", retry {attempt}" if attempt else "",
        )


def _elapsed_ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def retry_delay(attempt: int, settings: Settings, retry_after: float | None) -> float:
    """Exponential backoff with full jitter, or what the server asked for."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), _MAX_RETRY_AFTER)
    ceiling = min(settings.retry_max_delay, settings.retry_base_delay * (2**attempt))
    return random.uniform(ceiling / 2, ceiling)


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


class IncompleteStream(Exception):
    """The stream ended without ``message_stop``: what came was only part of a message."""


class NotAStream(Exception):
    """A 200 answer that is not the API's event stream (a proxy's or captive portal's page)."""


def describe_failure(error: BaseException) -> str:
    """A sentence the user can act on."""
    load_sdk()
    import anthropic

    if isinstance(error, (IncompleteStream, NotAStream)):
        return str(error)
    if type(error).__module__.startswith(("httpx", "httpcore")):  # the connection broke mid-response
        return f"The connection to the model API broke off: {type(error).__name__}: {error}"
    if isinstance(error, anthropic.AuthenticationError):
        return (
            "The model API rejected the API key (401). Check ANTHROPIC_API_KEY or run "
            "`acp-hermes setup`."
        )
    if isinstance(error, anthropic.PermissionDeniedError):
        return f"The model API refused access (403): {_api_message(error)}"
    if isinstance(error, anthropic.NotFoundError):
        return f"The model API returned 404: {_api_message(error)} (is the model name right?)"
    if isinstance(error, anthropic.APIStatusError):
        if error.status_code < 400:  # an ``error`` event inside a streamed 200 response
            return f"The model stream broke off: {_api_message(error)}"
        return f"The model API returned an error ({error.status_code}): {_api_message(error)}"
    if isinstance(error, anthropic.APITimeoutError):
        return "The model API did not answer in time."
    if isinstance(error, anthropic.APIConnectionError):
        return f"Could not reach the model API: {error.__cause__ or error}"
    return f"The model call failed: {type(error).__name__}: {error}"


def _api_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))


async def _back_off_or_raise(error: Exception, attempt: int, settings: Settings) -> None:
    """Sleep before retry ``attempt + 1``, or raise ModelError when the failure is final."""
    response = getattr(error, "response", None)
    if not _is_retryable(error) or attempt >= settings.max_retries:
        log.warning("model call failed after %d attempt(s): %s", attempt + 1, error)
        status = getattr(response, "status_code", None)
        raise ModelError(describe_failure(error), status=status if isinstance(status, int) else None,
                         rate_limits=rate_limits(getattr(response, "headers", None))) from error
    delay = retry_delay(attempt, settings, _retry_after(getattr(response, "headers", None)))
    log.info("model call failed (%s); retry %d in %.2fs", error, attempt + 1, delay)
    await anyio.sleep(delay)


def rejects_server_tools(error: BaseException, params: dict[str, Any]) -> bool:
    """Whether a 400 refuses the request's server tools (``web_search``, ``web_fetch``): an endpoint
    that speaks the Messages API without them names the tool, its type or the ``tools`` field."""
    server = [tool for tool in params.get("tools", ()) if "type" in tool]
    if not server or getattr(error, "status_code", None) != 400:
        return False
    said = _api_message(error).lower()
    return "tools" in said or any(tool["type"] in said or tool["name"] in said for tool in server)


def _is_retryable(error: BaseException) -> bool:
    load_sdk()
    import anthropic

    if isinstance(error, IncompleteStream):  # cut off before anything was shown: like a dropped connection
        return True
    if isinstance(error, NotAStream):
        return False
    response = getattr(error, "response", None)
    verdict = response.headers.get("x-should-retry") if response is not None else None
    if verdict in ("true", "false"):  # the server's explicit word wins over the status
        return bool(verdict == "true")
    if isinstance(error, anthropic.APIStatusError):
        # An ``error`` event inside a 200 stream carries its type instead of a status.
        return error.status_code in RETRYABLE_STATUSES or getattr(error, "type", None) in RETRYABLE_STREAM_ERRORS
    return isinstance(error, anthropic.APIConnectionError)


@dataclass
class _Accumulator:
    """Builds the assistant message's content blocks from stream events."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    json_parts: dict[int, list[str]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"
    started: bool = False  # message_start seen: this is the API's stream
    stopped: bool = False  # message_stop seen: the message is whole

    def content(self) -> list[dict[str, Any]]:
        return [self.blocks[i] for i in sorted(self.blocks)]


class AnthropicProvider:
    """One per process: the HTTP client (and its TLS context) is shared by every session."""

    def __init__(self, settings: Settings, import_index: Path | None = None) -> None:
        self._settings = settings
        self._imports = InitIndex(import_index)  # what the SDK's lazy import read, kept between starts
        self._client: AsyncAnthropic | None = None
        self._client_lock = threading.Lock()  # prepare() builds it on a worker thread
        self._tls = TlsContext()
        # Set once a model response's first output has been handled (or the response has ended): the
        # warm-up leaves what only tool calls need until then, so it does not compete for the GIL with
        # a first prompt getting its request out and its first chunk to the client.
        self.responding = threading.Event()

    def prepare(self) -> None:
        """Import the SDK and build the HTTP client now, so the first request does not wait for them
        (its TLS context meanwhile, on a thread of its own: ``model.tls``)."""
        self._tls.start()
        self._get_client()

    def _get_client(self) -> AsyncAnthropic:
        with self._client_lock:
            if self._client is None:
                load_sdk(self._imports)
                from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

                key = self._settings.api_key.get_secret_value() if self._settings.api_key else None
                client = AsyncAnthropic(
                    api_key=key,
                    base_url=self._settings.base_url,
                    max_retries=0,
                    timeout=self._settings.request_timeout,
                    # The SDK's own HTTP client in every respect but where its TLS context was built.
                    http_client=DefaultAsyncHttpxClient(verify=self._tls.get()),
                )
                client.messages  # noqa: B018  imports the Messages resource (a lazy attribute) here, off the event loop
                self._client = client
            return self._client

    def remember_imports(self) -> None:
        """Keep what the SDK's import read for the next start (blocking: call it off the event loop,
        once the first response has come, when what a turn imports is imported)."""
        self._imports.save()

    async def _ready_client(self) -> AsyncAnthropic:
        """The client; while the warm-up is still building it, waited for on a worker thread, so the
        event loop (other sessions' streams, a cancel) never stops for the SDK's import."""
        client = self._client
        return client if client is not None else await anyio.to_thread.run_sync(self._get_client)

    async def check_access(self) -> None:
        """One cheap authenticated request (``GET /v1/models``, a single entry): raises the SDK's error
        when the endpoint refuses the key or cannot be reached (``acp-hermes setup`` checks a key)."""
        await (await self._ready_client()).models.list(limit=1)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._imports.save)  # a process that ends before its warm-up did keeps it too
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model message, retrying failures that happen before anything was shown."""
        params = request_body(request)
        attempt = 0
        while True:
            yielded = False
            try:
                async for event in self._stream_once(params, attempt):
                    yielded = True
                    yield event
                return
            except Exception as error:
                if yielded:
                    raise ModelError(describe_failure(error)) from error
                if rejects_server_tools(error, params):
                    raise ServerToolsRejected(describe_failure(error)) from error
                await _back_off_or_raise(error, attempt, self._settings)
                attempt += 1

    async def _stream_once(self, params: dict[str, Any], attempt: int = 0) -> AsyncIterator[StreamEvent]:
        client = await self._ready_client()
        _log_request(params, attempt, streamed=True)
        sent = time.perf_counter()
        stream = await client.messages.create(**params, stream=True)
        debug = log.isEnabledFor(logging.DEBUG)
        if debug:
            response = stream.response
            log.debug("model response: HTTP %d after %.0f ms (request-id %s)", response.status_code, _elapsed_ms(sent),
                      response.headers.get("request-id", "none"))
        acc = _Accumulator()
        first = debug
        try:
            async for event in stream:
                if first:
                    first = False
                    log.debug("model stream: first event (%s) after %.0f ms", event.type, _elapsed_ms(sent))
                for out in self._absorb(acc, event):
                    yield out
                    # Taken back once the turn has handled it (the first text shown, say): only then may
                    # the warm-up compete for the GIL, not while the first chunk is on its way out.
                    self.responding.set()
        finally:
            self.responding.set()
            with anyio.CancelScope(shield=True):
                await stream.close()
        if not acc.started:
            kind = stream.response.headers.get("content-type", "no content type")
            raise NotAStream(
                f"The model endpoint answered with something that is not a Messages stream ({kind}). "
                "Check ANTHROPIC_BASE_URL and any proxy between you and the API."
            )
        if not acc.stopped:
            raise IncompleteStream("The model stream ended before the message was complete.")
        if debug:
            content = acc.content()
            calls = sum(1 for block in content if block["type"] == "tool_use")
            log.debug("model message: stop %s, %d blocks (%d tool calls), %s, %.0f ms", acc.stop_reason, len(content),
                      calls, _usage_text(acc.usage), _elapsed_ms(sent))
        yield Completed(tuple(block_from_wire(block) for block in acc.content()), acc.stop_reason, acc.usage,
                        rate_limits(stream.response.headers))

    def _absorb(self, acc: _Accumulator, event: Any) -> list[StreamEvent]:
        kind = event.type
        if kind == "message_stop":
            acc.stopped = True
        elif kind == "message_start":
            acc.started = True
            usage = event.message.usage
            acc.usage = Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=usage.cache_read_input_tokens or 0,
                cache_write_tokens=usage.cache_creation_input_tokens or 0,
                web_searches=_web_searches(usage),
            )
        elif kind == "content_block_start":
            block = event.content_block.model_dump(mode="json", exclude_none=True)
            if block["type"] in ("tool_use", "server_tool_use"):
                block["input"] = {}
                acc.json_parts[event.index] = []
            elif block["type"] == "text":
                block["text"] = block.get("text", "")
                block.pop("citations", None)
            acc.blocks[event.index] = block
        elif kind == "content_block_delta":
            return self._absorb_delta(acc, event.index, event.delta)
        elif kind == "content_block_stop":
            block = acc.blocks.get(event.index)
            if block is not None and block["type"] in ("tool_use", "server_tool_use"):
                raw = "".join(acc.json_parts.pop(event.index, []))
                arguments = _parse_arguments(raw)
                block["input"] = arguments if arguments is not None else {}
                if block["type"] == "server_tool_use":
                    started = block_from_wire(block)
                    return [started] if isinstance(started, ServerToolUse) else []
                return [ToolUseReady(block["id"], block["name"], arguments, raw)]
            if block is not None and block["type"].endswith("_tool_result"):  # web_search_/web_fetch_tool_result
                finished = block_from_wire(block)
                return [finished] if isinstance(finished, ServerToolResult) else []
        elif kind == "message_delta":
            if event.delta.stop_reason:
                acc.stop_reason = event.delta.stop_reason
            output = getattr(event.usage, "output_tokens", None)
            if output is not None:
                acc.usage = Usage(acc.usage.input_tokens, output, acc.usage.cache_read_tokens,
                                  acc.usage.cache_write_tokens, max(acc.usage.web_searches, _web_searches(event.usage)))
        return []

    @staticmethod
    def _absorb_delta(acc: _Accumulator, index: int, delta: Any) -> list[StreamEvent]:
        block = acc.blocks.get(index)
        if block is None:
            return []
        kind = delta.type
        if kind == "text_delta":
            block["text"] += delta.text
            return [TextDelta(delta.text)] if delta.text else []
        if kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
            return [ThinkingDelta(delta.thinking)] if delta.thinking else []
        if kind == "citations_delta":  # kept: the text goes back to the API with its citations
            block.setdefault("citations", []).append(delta.citation.model_dump(mode="json", exclude_none=True))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.signature
        elif kind == "input_json_delta":
            acc.json_parts.setdefault(index, []).append(delta.partial_json)
        return []

    async def complete(
        self, *, model: str, system: str, prompt: str, max_tokens: int = 512
    ) -> tuple[str, Usage]:
        """One short non-streamed call (titles, summaries), with the same retry policy."""
        client = await self._ready_client()
        messages = [{"role": "user", "content": prompt}]
        params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "system": system, "messages": messages}
        attempt = 0
        while True:
            _log_request(params, attempt, streamed=False)
            sent = time.perf_counter()
            try:
                message = await client.messages.create(**params)
                self.responding.set()
                break
            except Exception as error:
                await _back_off_or_raise(error, attempt, self._settings)
                attempt += 1
        text = "".join(block.text for block in message.content if block.type == "text")
        usage = message.usage
        result = Usage(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_input_tokens or 0,
            usage.cache_creation_input_tokens or 0,
        )
        log.debug("model reply (not streamed): stop %s, %s, %.0f ms", message.stop_reason, _usage_text(result),
                  _elapsed_ms(sent))
        return text, result


def _web_searches(usage: Any) -> int:
    """The web searches a (cumulative) usage report counts; none when it has no server tool usage."""
    server = getattr(usage, "server_tool_use", None)
    return int(getattr(server, "web_search_requests", 0) or 0)


def _usage_text(usage: Usage) -> str:
    return (f"tokens in {usage.input_tokens}, out {usage.output_tokens}, cache read {usage.cache_read_tokens}, "
            f"cache write {usage.cache_write_tokens}")


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
