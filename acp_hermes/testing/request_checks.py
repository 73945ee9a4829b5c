"""Reading a Messages request the way the API does, for the scripted server: its cacheable blocks in
prefix order, deterministic token estimates, and the 400 the real API would answer a malformed one with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_CACHE_BREAKPOINTS = 4
SERVER_TOOL_TYPES = frozenset({"web_search_20250305", "web_search_20260209", "web_search_20260318",
                               "web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309", "web_fetch_20260318"})


def estimate_tokens(text: str) -> int:
    """About four characters per token: deterministic, so tests can predict every usage figure."""
    return (len(text) + 3) // 4


def sealed(what: str, url: str) -> str:
    """The opaque value the API puts in a web result (``encrypted_content``, ``encrypted_index``) and
    wants back unchanged: made from the URL here, so a request can be checked without state."""
    return f"sealed-{what}-" + hashlib.sha256(url.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class PromptBlock:
    """One cacheable unit of a request, in the API's prefix order: tools, then system, then messages."""

    canonical: str
    breakpoint: bool

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.canonical)


def prompt_blocks(body: Mapping[str, Any]) -> list[PromptBlock]:
    """The request as a sequence of blocks; ``cache_control`` marks breakpoints but is not content.

    A top-level ``cache_control`` (automatic caching) puts a breakpoint on the last block.
    """
    blocks = [_prompt_block("tool", tool) for tool in _as_list(body.get("tools"))]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(_prompt_block("system", {"type": "text", "text": system}))
    else:
        blocks.extend(_prompt_block("system", item) for item in _as_list(system))
    for position, message in enumerate(_as_list(body.get("messages"))):
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else _as_list(content)
        blocks.extend(_prompt_block("block", item, message=position, role=message.get("role")) for item in items)
    if blocks and body.get("cache_control") and not blocks[-1].breakpoint:
        blocks[-1] = PromptBlock(blocks[-1].canonical, True)
    return blocks


def estimate_input_tokens(body: Mapping[str, Any]) -> int:
    return sum(block.tokens for block in prompt_blocks(body))


def _prompt_block(kind: str, raw: Any, **context: Any) -> PromptBlock:
    has_breakpoint = isinstance(raw, Mapping) and raw.get("cache_control") is not None
    if isinstance(raw, Mapping):
        raw = {name: value for name, value in raw.items() if name != "cache_control"}
    canonical = json.dumps({**context, kind: raw}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return PromptBlock(canonical, has_breakpoint)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def request_problem(body: Any) -> str | None:
    """The 400 message the real API would give for a malformed Messages request, or None.

    Only rules that commonly catch product bugs are checked: required fields, at most four cache
    breakpoints, and every tool_use answered by a tool_result in the very next message.
    """
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (a non-empty list)"
    breakpoints = sum(block.breakpoint for block in prompt_blocks(body))
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
    for number, tool in enumerate(_as_list(body.get("tools"))):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind is not None and kind != "custom" and kind not in SERVER_TOOL_TYPES:
            return f"tools.{number}: Input tag '{kind}' found using 'type' does not match any of the expected tags"
    return _tool_pairing_problem(messages) or _server_results_problem(messages)


def _server_results_problem(messages: list[Any]) -> str | None:
    """A server tool call must be answered by its result in the same message, and a web result must
    come back exactly as the API sent it (its sealed fields unchanged)."""
    for position, message in enumerate(messages):
        blocks = [b for b in _as_list(message.get("content") if isinstance(message, Mapping) else None)
                  if isinstance(b, Mapping)]
        called = {b.get("id") for b in blocks if b.get("type") == "server_tool_use"}
        answered = {b.get("tool_use_id") for b in blocks if str(b.get("type", "")).endswith("_tool_result")
                    and b.get("type") != "tool_result"}
        if called - answered or answered - called:
            return (f"messages.{position}: each `server_tool_use` block needs its result block in the same message "
                    f"(unmatched: {', '.join(sorted(map(str, (called - answered) | (answered - called))))})")
        for block in blocks:
            results = block.get("content") if block.get("type") == "web_search_tool_result" else None
            citations = block.get("citations") if block.get("type") == "text" else None
            for item in [*_as_list(results), *_as_list(citations)]:
                if not isinstance(item, Mapping) or "url" not in item:
                    continue
                field, what = ("encrypted_index", "index") if "cited_text" in item else ("encrypted_content", "content")
                if item.get(field) != sealed(what, str(item["url"])):
                    return (f"messages.{position}: invalid {field} for {item['url']}: web results must be sent "
                            "back unchanged")
    return None


def _tool_pairing_problem(messages: list[Any]) -> str | None:
    expected: set[str] = set()
    for position, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = [item for item in _as_list(content) if isinstance(item, Mapping)]
        answered = [item.get("tool_use_id") for item in blocks if item.get("type") == "tool_result"]
        for number, tool_use_id in enumerate(answered):
            if tool_use_id not in expected:
                return (
                    f"messages.{position}.content.{number}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {tool_use_id}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
        missing = sorted(expected - set(answered))
        if missing:
            return (
                f"messages.{position}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message."
            )
        expected = {str(item.get("id")) for item in blocks if item.get("type") == "tool_use"}
    return None
