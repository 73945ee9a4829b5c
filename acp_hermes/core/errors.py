"""Failures the core reports to whoever drives it; the ACP adapter maps each to a JSON-RPC error."""

from __future__ import annotations

from pathlib import Path

from acp_hermes_memory.session_db import SessionNotFound


class InvalidInput(ValueError):
    """A request the core cannot serve as asked (a bad option, a relative path); the message says why."""


def not_for_a_subagent(session_id: str, parent_id: str | None, instead: str) -> InvalidInput:
    """The refusal of a request that would drive a subagent's session directly: a child follows its
    parent (its mode, model, history and lifetime are its parent's business), so an editor acts on the
    parent. ``instead`` says what to do."""
    parent = f" ({parent_id})" if parent_id else ""
    return InvalidInput(f"session {session_id} is a subagent working on its parent's task{parent}: {instead}")


class ModeUnavailable(InvalidInput):
    """A mode this session does not offer (``bypass`` where no sandbox runs): the message is the reason,
    written to the user, who reads it where the editor shows the error."""


# No session with this id, in memory or in the SessionDB. One class with the SessionDB's own, so a
# session another process deleted while this one still holds it is "not found" too, wherever noticed.
SessionNotFoundError = SessionNotFound


def damaged_database(path: Path, detail: str) -> str:
    """What to tell the user about a damaged ``state.db``, in one line (the server and every command)."""
    return (
        f"acp-hermes's session database {path} is damaged ({detail}). Run `acp-hermes doctor --repair` in a "
        "terminal: it moves the file aside (kept) and starts a fresh one with every session it can still read."
    )


class SessionCreationFailed(RuntimeError):
    """``session/new`` answered, but building or storing the session failed afterwards."""

    def __init__(self, session_id: str, details: str) -> None:
        super().__init__(f"session {session_id} could not be created: {details}")
        self.session_id = session_id
        self.details = details
