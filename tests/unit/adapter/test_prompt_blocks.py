"""ACP ContentBlocks ↔ the core's prompt parts, and the prompt handler refusing URIs with a NUL byte."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from acp_hermes.adapter.prompt_blocks import to_block, to_part, to_parts
from acp_hermes.adapter.server import HermesAgent
from acp_hermes.config import Paths, Settings
from acp_hermes.core.hooks import PromptVerdict
from acp_hermes.core.runtime import Runtime
from acp_hermes.core.user_prompt import (
    AudioPart,
    ImagePart,
    LinkPart,
    PromptPart,
    ResourcePart,
    TextPart,
    UnsupportedPart,
)
from acp_hermes_tools.contracts import ToolServices
from tests.support.schema_check import default_schema

ROUND_TRIPS: list[tuple[dict[str, Any], PromptPart]] = [
    ({"type": "text", "text": "hello"}, TextPart("hello")),
    ({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}, ImagePart("image/png", "iVBORw0KGgo=")),
    ({"type": "image", "mimeType": "image/png", "data": "", "uri": "file:///w/p.png"},
     ImagePart("image/png", "", "file:///w/p.png")),
    ({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}, AudioPart("audio/wav", "UklGRg==")),
    ({"type": "resource", "resource": {"uri": "file:///w/a.py", "mimeType": "text/x-python", "text": "x = 1\n"}},
     ResourcePart("file:///w/a.py", "text/x-python", "x = 1\n")),
    ({"type": "resource", "resource": {"uri": "file:///w/b.bin", "blob": "AAEC"}},
     ResourcePart("file:///w/b.bin", blob="AAEC")),
    ({"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}, LinkPart("file:///w/a.py", "a.py")),
    ({"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py", "mimeType": "text/x-python",
      "title": "A", "description": "the module", "size": 6},
     LinkPart("file:///w/a.py", "a.py", "text/x-python", "A", "the module", 6)),
]


@pytest.mark.parametrize(("block", "part"), ROUND_TRIPS, ids=lambda v: v["type"] if isinstance(v, dict) else "")
def test_block_to_part_and_back(block: dict[str, Any], part: PromptPart) -> None:
    assert to_part(block) == part
    assert to_block(part) == block
    assert default_schema().problems("ContentBlock", block) == []


def test_annotations_and_meta_are_not_kept() -> None:
    block = {"type": "text", "text": "t", "annotations": {"priority": 1}, "_meta": {"x": 1}}
    assert to_block(to_part(block)) == {"type": "text", "text": "t"}


@pytest.mark.parametrize(
    ("block", "part"),
    [
        ({"type": "text"}, TextPart("")),
        ({"type": "image"}, ImagePart("", "")),
        ({"type": "resource"}, ResourcePart("")),
        ({"type": "resource", "resource": None}, ResourcePart("")),
        ({"type": "resource_link"}, LinkPart("", "")),
        ({"type": "hologram", "data": "?"}, UnsupportedPart("hologram")),
        ({}, UnsupportedPart("None")),
    ],
)
def test_missing_fields_get_defaults_and_unknown_kinds_are_kept_as_unsupported(
    block: dict[str, Any], part: PromptPart
) -> None:
    assert to_part(block) == part


def test_to_parts_keeps_order() -> None:
    blocks = [{"type": "text", "text": "see"}, {"type": "resource_link", "uri": "file:///a", "name": "a"},
              {"type": "video"}]
    assert to_parts(blocks) == [TextPart("see"), LinkPart("file:///a", "a"), UnsupportedPart("video")]
    assert to_parts([]) == []


def test_an_embedded_resource_without_contents_gets_empty_text() -> None:
    block = to_block(ResourcePart("file:///w/empty"))
    assert block == {"type": "resource", "resource": {"uri": "file:///w/empty", "text": ""}}
    assert default_schema().problems("ContentBlock", block) == []


def test_an_unsupported_part_replays_as_a_placeholder() -> None:
    block = to_block(UnsupportedPart("video"))
    assert block == {"type": "text", "text": "[video content]"}


# -- the prompt handler: URIs with a NUL byte are refused naming the block ------------------------


class NoHooks:
    async def prompt_submitted(self, text: str) -> PromptVerdict:
        return PromptVerdict()


class FakeSession:
    id = "s1"
    subagent = None
    cancel_epoch = 0

    def __init__(self) -> None:
        self.prompts: list[list[PromptPart]] = []
        self.services = SimpleNamespace(tools=SimpleNamespace(services=ToolServices()),  # no skills: no /<skill>
                                        trust=SimpleNamespace(settled=True),
                                        hooks=NoHooks())  # nothing to ask before a turn
        self.choices = SimpleNamespace(model="claude-sonnet-5-5", thought_level="off")

    def arrive(self) -> object:
        return SimpleNamespace(epoch=0)

    def leave(self, place: object) -> None: ...

    async def prompt(self, parts: list[PromptPart], client_message_id: str | None = None, *,
                     place: object = None, notes: object = ()) -> str:
        self.prompts.append(list(parts))
        return "end_turn"


@pytest.fixture
def agent_and_session(tmp_path: Path) -> tuple[HermesAgent, FakeSession]:
    agent = HermesAgent(Runtime(Settings(), Paths(tmp_path)))
    session = FakeSession()

    async def find(session_id: str, instead: str) -> FakeSession:
        return session

    agent._session = find  # type: ignore[method-assign,assignment]

    async def no_menu(session: object, *, force: bool = False) -> None: ...

    agent._announce_menu = no_menu  # type: ignore[method-assign,assignment]
    return agent, session


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (ResourceContentBlock(type="resource_link", uri="file:///w/a\0.py", name="a.py"), "prompt[1].uri"),
        (EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(uri="file:///\0", text="x")),
         "prompt[1].uri"),
        (ImageContentBlock(type="image", mimeType="image/png", data="", uri="file:///p\0.png"), "prompt[1].uri"),
    ],
    ids=["resource_link", "embedded-resource", "image"],
)
@pytest.mark.anyio
async def test_a_nul_in_a_uri_is_refused_naming_the_block(
    agent_and_session: tuple[HermesAgent, FakeSession], bad: Any, field: str
) -> None:
    agent, session = agent_and_session
    with pytest.raises(RequestError) as caught:
        await agent.prompt("s1", [TextContentBlock(type="text", text="look"), bad])
    assert caught.value.code == -32602
    assert caught.value.data == {"details": f"{field}: contains a NUL byte"}
    assert session.prompts == []  # nothing reached the model


@pytest.mark.anyio
async def test_clean_blocks_reach_the_session_as_parts(agent_and_session: tuple[HermesAgent, FakeSession]) -> None:
    agent, session = agent_and_session
    blocks = [
        TextContentBlock(type="text", text="text may hold \0 bytes"),
        ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py"),
    ]
    assert await agent.prompt("s1", blocks) == PromptResponse(stop_reason="end_turn")
    assert session.prompts == [[TextPart("text may hold \0 bytes"), LinkPart("file:///w/a.py", "a.py")]]
