"""Turn the parts of a user's prompt into model message content.

Every kind of part gets a defined treatment: text as is, images as image blocks, embedded
text resources and links to local files as clearly delimited attachments that name their URI
(inlined up to a size cap), anything else as a short note saying what was left out and why,
so the model never silently misses part of what the user sent.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp_hermes.core.user_prompt import (
    AudioPart,
    ImagePart,
    LinkPart,
    PromptPart,
    ResourcePart,
    TextPart,
    UnsupportedPart,
)
from acp_hermes.model.messages import Block, Image, Text
from acp_hermes_memory.text import looks_binary
from acp_hermes_memory.values import value

INLINE_FILE_LIMIT = 256 * 1024
IMAGE_LIMIT = 5 * 1024 * 1024
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_EXTENSION_IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png",
                          ".gif": "image/gif", ".webp": "image/webp"}


@value
class ConvertedPrompt:
    """Model content plus a plain-text rendering for titles, search and logs."""

    content: list[Block]
    plain_text: str


def attached_paths(parts: Sequence[PromptPart], cwd: Path) -> list[str]:
    """The local files a prompt attaches (embedded resources and links to ``file://`` URIs)."""
    found = (local_path(part.uri, cwd) for part in parts if isinstance(part, (ResourcePart, LinkPart)))
    return [str(path) for path in found if path is not None]


def local_path(uri: str, cwd: Path) -> Path | None:
    """The local file a ``file://`` URI or a plain path points to, or None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            return None
        raw = unquote(parsed.path)
        if len(raw) > 2 and raw[0] == "/" and raw[2] == ":":  # file:///C:/x on Windows
            raw = raw[1:]
        return Path(raw)
    if parsed.scheme and len(parsed.scheme) > 1:  # http:, zed:, ... (a one-letter scheme is a drive)
        return None
    path = Path(os.path.expanduser(uri))
    return path if path.is_absolute() else cwd / path


def _attachment(uri: str, text: str, mime: str | None) -> str:
    """A file's text in an ``<attachment>`` frame that nothing in the file can close (``memory.frames``)."""
    from acp_hermes_memory.frames import framed

    return framed("attachment", text, uri=uri, **({"type": mime} if mime else {}))


Converted = tuple[Block, str]


def _note(text: str) -> Block:
    return Text(f"[{text}]")


def _image(mime: str, data: str) -> Block:
    return Image(mime, data)


def _from_local_file(uri: str, path: Path, label: str) -> Converted:
    try:
        size = path.stat().st_size
    except OSError as exc:
        return _note(f"Referenced file {uri} could not be read: {exc.strerror or exc}"), label
    if path.is_dir():
        return _note(f"Referenced directory {uri}; use the file tools to explore it"), label
    image_type = _EXTENSION_IMAGE_TYPES.get(path.suffix.lower())
    if image_type and size <= IMAGE_LIMIT:
        return _image(image_type, base64.b64encode(path.read_bytes()).decode("ascii")), label
    if size > INLINE_FILE_LIMIT:
        return (
            _note(f"Referenced file {uri} ({size:,} bytes) is larger than {INLINE_FILE_LIMIT:,} bytes and "
                  "was not inlined; read the parts you need with read_file"),
            label,
        )
    data = path.read_bytes()
    if looks_binary(data):
        return _note(f"Referenced file {uri} ({size:,} bytes) is binary and was not inlined"), label
    return Text(_attachment(uri, data.decode("utf-8", errors="replace"), None)), label


def _text(part: TextPart, cwd: Path) -> Converted:
    return Text(part.text), part.text


def _image_part(part: ImagePart, cwd: Path) -> Converted:
    mime, data = part.mime_type, part.data
    if mime in IMAGE_TYPES and data:
        try:
            size = len(base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            return _note("An attached image could not be decoded (invalid base64)"), "[image]"
        if size > IMAGE_LIMIT:
            limit = f"{IMAGE_LIMIT:,}"
            return _note(f"An attached image of {size:,} bytes exceeds the {limit}-byte limit"), "[image]"
        return _image(mime, data), "[image]"
    if part.uri and urlparse(part.uri).scheme in ("http", "https"):
        return Image(url=part.uri), "[image]"
    return _note(f"An attached image of type {mime or 'unknown'} is not supported"), "[image]"


def _audio(part: AudioPart, cwd: Path) -> Converted:
    mime = part.mime_type or "audio"
    return _note(f"An audio attachment ({mime}) was left out: audio input is not supported"), "[audio]"


def _embedded(part: ResourcePart, cwd: Path) -> Converted:
    label = f"@{part.uri}"
    if part.text is not None:
        return Text(_attachment(part.uri, part.text, part.mime_type)), label
    blob = part.blob or ""
    if part.mime_type in IMAGE_TYPES and blob:
        return _image(part.mime_type, blob), label
    size = len(blob) * 3 // 4
    what = f"{part.mime_type or 'binary'}, about {size:,} bytes"
    return _note(f"Attachment {part.uri} ({what}) is binary and was not included"), label


def _link(part: LinkPart, cwd: Path) -> Converted:
    name = part.name or part.uri
    path = local_path(part.uri, cwd)
    if path is None:
        return _note(f"Referenced resource {name}: {part.uri} (not a local file, not fetched)"), f"@{name}"
    return _from_local_file(part.uri, path, f"@{name}")


def _unsupported(part: UnsupportedPart, cwd: Path) -> Converted:
    return _note(f"A content block of type {part.kind!r} is not supported"), ""


_CONVERTERS: dict[type[Any], Callable[[Any, Path], Converted]] = {
    TextPart: _text,
    ImagePart: _image_part,
    AudioPart: _audio,
    ResourcePart: _embedded,
    LinkPart: _link,
    UnsupportedPart: _unsupported,
}


def convert_prompt(parts: Sequence[PromptPart], cwd: Path) -> ConvertedPrompt:
    """Convert a prompt's parts for the model, in order (blocking: reads linked local files)."""
    content: list[Block] = []
    plain: list[str] = []
    for part in parts:
        converted, text = _CONVERTERS[type(part)](part, cwd)
        content.append(converted)
        if text:
            plain.append(text)
    if not content:
        content.append(Text("(empty prompt)"))
    return ConvertedPrompt(content, " ".join(plain).strip())

