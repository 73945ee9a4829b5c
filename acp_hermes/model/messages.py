"""The conversation in the core's own terms: messages of typed content blocks.

The core reads and builds these and nothing else; ``model.provider`` is the only code that turns them
into the Messages API's JSON and back (requests, streamed answers, stored payloads). A block that came
from the API or from a stored row keeps that dict in ``raw`` when its own fields would not rebuild it
exactly (fields in another order, fields the core has no use for, such as a text's citations), so what
goes back to the API and into the SessionDB is byte for byte what came; a block the agent made has no
``raw``. A kind of block this build does not know is ``Other``, kept whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_hermes_memory.values import value

Raw = dict[str, Any] | None  # the block as the API or a stored row gave it, when its fields alone differ


@value
class Text:
    text: str
    raw: Raw = None

    kind = "text"


@value
class Thinking:
    """The model's reasoning (or, ``redacted``, the API's encrypted stand-in for it in ``text``)."""

    text: str
    signature: str = ""
    redacted: bool = False
    raw: Raw = None

    @property
    def kind(self) -> str:
        return "redacted_thinking" if self.redacted else "thinking"


@value
class Image:
    """An image the user attached: its bytes (base64) and type, or a web address."""

    media_type: str = ""
    data: str = ""
    url: str = ""
    raw: Raw = None

    kind = "image"


@value
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    raw: Raw = None

    kind = "tool_use"


@value
class ToolResult:
    tool_use_id: str
    content: str | tuple[Block, ...]
    is_error: bool = False
    raw: Raw = None

    kind = "tool_result"

    @property
    def text(self) -> str:
        """The result as text; an image or a document in it becomes a placeholder."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(item.text if isinstance(item, Text) else f"[{item.kind}]" for item in self.content)


@value
class ServerToolUse:
    """A tool the API runs itself (web search, web fetch): shown, never run here."""

    id: str
    name: str
    input: dict[str, Any]
    raw: Raw = None

    kind = "server_tool_use"


@value
class SearchHit:
    title: str
    url: str


@value
class FetchedPage:
    url: str
    title: str
    text: str | None  # the page's text, when the API returned it as text


@value
class ServerToolResult:
    """What a server tool came to. It goes back to the API exactly as it came (``raw``: its results may
    be encrypted); the fields are what the agent shows of it."""

    tool_use_id: str
    tool: str  # web_search, web_fetch, or the API's name of another server tool
    raw: dict[str, Any]
    error_code: str | None = None  # the tool failed
    hits: tuple[SearchHit, ...] = ()  # a search's results
    page: FetchedPage | None = None  # a fetch's page

    @property
    def kind(self) -> str:
        return f"{self.tool}_tool_result"


@value
class Other:
    """A kind of block this build does not know (a document, a newer API's block): kept whole."""

    raw: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.raw.get("type"))


Block = Text | Thinking | Image | ToolUse | ToolResult | ServerToolUse | ServerToolResult | Other


@value
class Message:
    role: str  # "user" or "assistant"
    blocks: tuple[Block, ...]

    def calls(self) -> list[ToolUse]:
        return [block for block in self.blocks if isinstance(block, ToolUse)]

    def results(self) -> list[ToolResult]:
        return [block for block in self.blocks if isinstance(block, ToolResult)]

    def text(self) -> str:
        """The text the message says (its text blocks, joined)."""
        return "".join(block.text for block in self.blocks if isinstance(block, Text))

    def only_results(self) -> bool:
        """A user message that holds tool results and nothing else."""
        return bool(self.blocks) and all(isinstance(block, ToolResult) for block in self.blocks)

    def plus(self, blocks: Sequence[Block]) -> Message:
        return Message(self.role, (*self.blocks, *blocks))


def user(*blocks: Block) -> Message:
    return Message("user", blocks)


def text_blocks(*texts: str) -> tuple[Block, ...]:
    return tuple(Text(text) for text in texts)
