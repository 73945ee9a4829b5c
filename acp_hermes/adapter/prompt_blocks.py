"""ACP ContentBlocks ↔ the core's prompt parts.

A prompt's blocks become ``PromptPart``s on the way in; a stored prompt's parts become blocks
again when ``session/load`` replays it. Annotations and ``_meta`` are not kept.
"""

from __future__ import annotations

from typing import Any

from acp_hermes.core.user_prompt import (
    AudioPart,
    ImagePart,
    LinkPart,
    PromptPart,
    ResourcePart,
    TextPart,
    UnsupportedPart,
)


def to_parts(blocks: list[dict[str, Any]]) -> list[PromptPart]:
    return [to_part(block) for block in blocks]


def to_part(block: dict[str, Any]) -> PromptPart:
    kind = block.get("type")
    if kind == "text":
        return TextPart(block.get("text", ""))
    if kind == "image":
        return ImagePart(block.get("mimeType", ""), block.get("data", ""), block.get("uri"))
    if kind == "audio":
        return AudioPart(block.get("mimeType", ""), block.get("data", ""))
    if kind == "resource":
        resource = block.get("resource") or {}
        return ResourcePart(resource.get("uri", ""), resource.get("mimeType"), resource.get("text"),
                            resource.get("blob"))
    if kind == "resource_link":
        return LinkPart(block.get("uri", ""), block.get("name", ""), block.get("mimeType"), block.get("title"),
                        block.get("description"), block.get("size"))
    return UnsupportedPart(str(kind))


def to_block(part: PromptPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return _without_none({"type": "image", "mimeType": part.mime_type, "data": part.data, "uri": part.uri})
    if isinstance(part, AudioPart):
        return {"type": "audio", "mimeType": part.mime_type, "data": part.data}
    if isinstance(part, ResourcePart):
        resource = _without_none({"uri": part.uri, "mimeType": part.mime_type, "text": part.text, "blob": part.blob})
        if "text" not in resource and "blob" not in resource:
            resource["text"] = ""
        return {"type": "resource", "resource": resource}
    if isinstance(part, LinkPart):
        return _without_none({"type": "resource_link", "uri": part.uri, "name": part.name, "mimeType": part.mime_type,
                              "title": part.title, "description": part.description, "size": part.size})
    return {"type": "text", "text": f"[{part.kind} content]"}


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
