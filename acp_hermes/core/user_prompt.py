"""What the user sent in one prompt, part by part, in the core's own terms.

The ACP adapter makes these from ContentBlocks; ``attachments`` turns them into model content;
the transcript stores them (``to_record``/``from_record``) so a reloaded session shows the
prompt exactly as it was sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_hermes_memory.values import value


@value
class TextPart:
    text: str


@value
class ImagePart:
    mime_type: str
    data: str  # base64; may be empty when ``uri`` points to the image
    uri: str | None = None


@value
class AudioPart:
    mime_type: str
    data: str


@value
class ResourcePart:
    """A resource the client embedded: its text, or its bytes (base64) in ``blob``."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


@value
class LinkPart:
    """A reference to a resource (usually a file) the agent may read itself."""

    uri: str
    name: str
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None


@value
class UnsupportedPart:
    """A kind of content this agent does not know; kept so the model can be told it was left out."""

    kind: str


PromptPart = TextPart | ImagePart | AudioPart | ResourcePart | LinkPart | UnsupportedPart


def command_text(parts: Sequence[PromptPart]) -> str | None:
    """The prompt's text when it is a single text part (a slash command is one), else None."""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    return None


def to_record(part: PromptPart) -> dict[str, Any]:
    """A JSON-able record of ``part`` (stored with the user's message)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, UnsupportedPart):
        return {"type": "unsupported", "kind": part.kind}
    kinds = {ImagePart: "image", AudioPart: "audio", ResourcePart: "resource", LinkPart: "resource_link"}
    record: dict[str, Any] = {"type": kinds[type(part)]}
    for name in part.__match_args__:
        value = getattr(part, name)
        if value is not None:
            record[name] = value
    return record


def from_record(record: dict[str, Any]) -> PromptPart:
    kind = record.get("type")
    fields = {key: value for key, value in record.items() if key != "type"}
    try:
        if kind == "text":
            return TextPart(str(record.get("text", "")))
        if kind == "image":
            return ImagePart(**fields)
        if kind == "audio":
            return AudioPart(**fields)
        if kind == "resource":
            return ResourcePart(**fields)
        if kind == "resource_link":
            return LinkPart(**fields)
    except TypeError:  # a record with fields this build does not know
        pass
    return UnsupportedPart(str(record.get("kind") or kind))
