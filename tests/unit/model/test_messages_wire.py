"""The typed conversation and the Messages API's JSON, both ways (``model.provider``): what came from the
API or a stored row goes back byte for byte; what the agent made is written the API's way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_hermes.model.messages import (
    FetchedPage,
    Image,
    Message,
    Other,
    SearchHit,
    ServerToolResult,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from acp_hermes.model.provider import block_from_wire, block_to_wire, message_from_wire, messages_to_wire

# As the SDK dumps them (its models' field order) and as stored rows keep them.
FROM_THE_API: list[dict[str, Any]] = [
    {"citations": [{"type": "web_search_result_location", "url": "https://a.dev"}], "text": "It is.", "type": "text"},
    {"signature": "c2ln", "thinking": "Let me see.", "type": "thinking"},
    {"data": "ZW5j", "type": "redacted_thinking"},
    {"id": "toolu_1", "input": {"path": "a.py", "z": 1, "a": 2}, "name": "read_file", "type": "tool_use"},
    {"id": "srvtoolu_1", "input": {"query": "acp"}, "name": "web_search", "type": "server_tool_use"},
    {"content": [{"encrypted_content": "eA==", "title": "ACP", "type": "web_search_result", "url": "https://a.dev"}],
     "tool_use_id": "srvtoolu_1", "type": "web_search_tool_result"},
    {"type": "container_upload", "file_id": "f1"},
]


@pytest.mark.parametrize("block", FROM_THE_API)
def test_a_block_from_the_api_goes_back_byte_for_byte(block: dict[str, Any]) -> None:
    assert json.dumps(block_to_wire(block_from_wire(block))) == json.dumps(block)


def test_blocks_the_agent_makes_are_written_the_apis_way_and_read_back_equal() -> None:
    made = [Text("hi"), Thinking("hmm", "sig"), ToolUse("t1", "read_file", {"path": "a"}),
            ToolResult("t1", "done"), ToolResult("t2", "broke", is_error=True), Image("image/png", "AAAA"),
            Image(url="https://a.dev/x.png")]
    wire = [block_to_wire(block) for block in made]
    assert wire == [
        {"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
        {"type": "tool_result", "tool_use_id": "t1", "content": "done"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "broke", "is_error": True},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://a.dev/x.png"}},
    ]
    assert [block_from_wire(block) for block in wire] == made  # nothing kept beside the fields: equal


def test_what_the_core_reads_of_a_block() -> None:
    text, thinking, redacted, call, _, search, unknown = (block_from_wire(block) for block in FROM_THE_API)
    assert isinstance(text, Text) and text.text == "It is."
    assert isinstance(thinking, Thinking) and (thinking.text, thinking.signature) == ("Let me see.", "c2ln")
    assert isinstance(redacted, Thinking) and redacted.redacted and redacted.kind == "redacted_thinking"
    assert call == ToolUse("toolu_1", "read_file", {"path": "a.py", "z": 1, "a": 2}, FROM_THE_API[3])
    assert isinstance(search, ServerToolResult)
    assert (search.tool, search.hits, search.kind) == ("web_search", (SearchHit("ACP", "https://a.dev"),),
                                                       "web_search_tool_result")
    assert isinstance(unknown, Other) and unknown.kind == "container_upload"


def test_a_fetch_and_a_failed_search_read_as_their_page_and_error() -> None:
    page = block_from_wire({"type": "web_fetch_tool_result", "tool_use_id": "f", "content": {
        "type": "web_fetch_result", "url": "https://b.dev", "content": {
            "type": "document", "title": "Docs", "source": {"type": "text", "data": "the page"}}}})
    assert isinstance(page, ServerToolResult) and page.page == FetchedPage("https://b.dev", "Docs", "the page")
    failed = block_from_wire({"type": "web_search_tool_result", "tool_use_id": "s",
                              "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}})
    assert isinstance(failed, ServerToolResult) and failed.error_code == "max_uses_exceeded"


def test_a_tool_input_that_is_not_an_object_goes_as_an_empty_one_in_its_place() -> None:
    call = block_from_wire({"type": "tool_use", "id": "t", "name": "x", "input": "oops", "caller": "direct"})
    assert isinstance(call, ToolUse) and call.input == {}
    assert list(block_to_wire(call).items()) == [("type", "tool_use"), ("id", "t"), ("name", "x"), ("input", {}),
                                                 ("caller", "direct")]


def test_plain_text_content_and_stray_items_read_as_blocks() -> None:
    message = message_from_wire({"role": "user", "content": "hello"})
    assert message == Message("user", (Text("hello"),))
    mixed = message_from_wire({"role": "assistant", "content": [{"type": "text", "text": "a"}, "stray", None]})
    assert mixed.blocks == (Text("a"),)
    assert messages_to_wire([message]) == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def test_a_result_holding_blocks_reads_them_and_its_text() -> None:
    result = block_from_wire({"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}},
        {"type": "text", "text": "caption"}]})
    assert isinstance(result, ToolResult) and result.text == "[image]\ncaption"
