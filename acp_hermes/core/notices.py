"""Notices: what the user is told outside the conversation, one shape for every source.

A source hands its message as it has always been written (``⚠️ This session's budget is 82% spent
…``); ``notice`` keeps that text for editors that show no notices (an agent message, as before) and
derives the notice's plain-text title (its first sentence) and description (the rest), and its
severity from the mark it opens with. Trust and hook messages go through the same function.
"""

from __future__ import annotations

import re
import uuid

from acp_hermes.core.events import Notice, NoticeKind, Severity

_MARKS: tuple[tuple[str, Severity], ...] = (("⚠️", "warning"), ("⚠", "warning"), ("⛔", "error"), ("❌", "error"),
                                            ("⏹", "info"), ("ℹ️", "info"))
_SENTENCE = re.compile(r"(.+?[.!?:])(?:\s|$)", re.DOTALL)
TITLE_CHARS = 120


def notice(kind: NoticeKind, text: str, *, shown: str | None = None, message_id: str | None = None,
           severity: Severity | None = None) -> Notice:
    """The notice of ``text``; ``shown``: what a client without notices sees instead (default: ``text``
    followed by a blank line, as such messages always were); ``severity`` overrides the mark's."""
    body = text.strip()
    marked_as: Severity = "info"
    for mark, level in _MARKS:
        if body.startswith(mark):
            body, marked_as = body[len(mark):].strip(), level
            break
    plain = body.replace("`", "")
    found = _SENTENCE.match(plain)
    title, rest = (found.group(1), plain[found.end():]) if found else (plain, "")
    title = title.rstrip(":").strip() or kind.capitalize()
    if len(title) > TITLE_CHARS:
        cut = title[:TITLE_CHARS].rsplit(" ", 1)[0]
        title, rest = cut + "…", plain
    return Notice(kind, severity or marked_as, title, rest.strip() or None,
                  text + "\n\n" if shown is None else shown, message_id or f"notice-{uuid.uuid4()}")
