"""The ``display`` record stored with each message, and how older spellings are brought forward.

Up to schema 3 the records used the wire protocol's field names (``rawInput``, ``messageId``,
ContentBlocks for the user's prompt); since schema 4 they use the agent's own
(``raw_input``, ``message_id``, prompt parts). Migration 4 rewrites stored rows once, and rows
read later are upgraded too, because an older acp-hermes still running in another window may
keep writing the old spelling into the same database.
"""

from __future__ import annotations

from typing import Any

_TOOL_KEYS = {"rawInput": "raw_input", "rawOutput": "raw_output", "content": "display"}
_PART_KEYS = {"mimeType": "mime_type"}
_PART_FIELDS = frozenset({"text", "data", "uri", "mime_type", "blob", "name", "title", "description", "size"})


def is_legacy(role: str, display: Any) -> bool:
    """Whether ``display`` still uses a pre-4 spelling (cheap: it runs for every row read)."""
    if not isinstance(display, dict):
        return False
    if role == "tool":
        return "rawInput" in display or "content" in display
    if role == "assistant":
        return "messageId" in display
    if role == "user":
        prompt = display.get("prompt")
        return isinstance(prompt, list) and any(_is_legacy_block(block) for block in prompt)
    return False


def upgrade(role: str, display: Any) -> Any:
    """``display`` in the current spelling (unchanged when it already is)."""
    if not is_legacy(role, display):
        return display
    if role == "tool":
        return {_TOOL_KEYS.get(key, key): value for key, value in display.items()}
    if role == "assistant":
        upgraded = {key: value for key, value in display.items() if key != "messageId"}
        upgraded["message_id"] = display["messageId"]
        return upgraded
    return {**display, "prompt": [_upgrade_block(block) for block in display["prompt"]]}


def _is_legacy_block(block: Any) -> bool:
    return isinstance(block, dict) and ("mimeType" in block or "resource" in block or "annotations" in block)


def _upgrade_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    flat = dict(block)
    resource = flat.pop("resource", None)
    if isinstance(resource, dict):  # an embedded resource carried its fields one level down
        flat.update(resource)
    renamed = {_PART_KEYS.get(key, key): value for key, value in flat.items()}
    return {key: value for key, value in renamed.items() if key == "type" or key in _PART_FIELDS}
