"""The ``<memory-context>`` fence: how a memory provider's recall rides in the user's message, and is kept
out of everything shown as someone's words.

Recall goes into the current user message (never the system prompt, whose bytes stay frozen for the
prompt cache), inside a fence with a one-line instruction. It is part of what the model reads, not
of what the user said: the stored prompt (its text and parts) and the replay never have it. A model
that echoes the fence back has it removed from what the editor sees, even when the tags arrive cut
across streamed chunks (``FenceScrubber``). Recall cannot close the fence it rides in, however a tag in
it is spelt: the fence is a ``memory.frames`` frame.
"""

from __future__ import annotations

from acp_hermes_memory.frames import framed
from acp_hermes_memory.providers import FENCE_CLOSE as CLOSE
from acp_hermes_memory.providers import FENCE_NAME
from acp_hermes_memory.providers import FENCE_OPEN as OPEN

INSTRUCTION = ("[Recalled by the memory provider for this message: background, not the user's words. Use what "
               "helps, ignore the rest, and never repeat this block.]")


def memory_context_block(recall: str) -> str:
    """The recall, fenced, as a text block of the user's message: no tag in it, however spelt, can close
    the fence (``memory.frames``)."""
    return framed(FENCE_NAME, f"{INSTRUCTION}\n{recall.strip()}")


class FenceScrubber:
    """Removes fences from streamed text, chunk by chunk, holding back only what might be a cut tag."""

    def __init__(self) -> None:
        self._held = ""  # text that may be the start of a tag
        self._inside = False

    def feed(self, chunk: str) -> str:
        """What of ``chunk`` (after what was held) can be shown now."""
        text, self._held = self._held + chunk, ""
        shown: list[str] = []
        while text:
            tag = CLOSE if self._inside else OPEN
            at = text.find(tag)
            if at >= 0:
                if not self._inside:
                    shown.append(text[:at])
                text, self._inside = text[at + len(tag):], not self._inside
                continue
            keep = _partial_tag_at_end(text, tag)
            if not self._inside:
                shown.append(text[: len(text) - keep])
            self._held = text[len(text) - keep:] if keep else ""
            break
        return "".join(shown).replace(CLOSE, "")

    def flush(self) -> str:
        """The end of the stream: what was held back was not a tag after all (unless inside a fence)."""
        held, self._held = self._held, ""
        return "" if self._inside else held


def _partial_tag_at_end(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
