"""Failures the core reports to whoever drives it; the ACP adapter maps each to a JSON-RPC error."""

from __future__ import annotations


class InvalidInput(ValueError):
    """A request the core cannot serve as asked (a bad option, a relative path); the message says why."""


class SessionNotFoundError(LookupError):
    """No session with this id, in memory or in the SessionDB."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionCreationFailed(RuntimeError):
    """``session/new`` answered, but building or storing the session failed afterwards."""

    def __init__(self, session_id: str, details: str) -> None:
        super().__init__(f"session {session_id} could not be created: {details}")
        self.session_id = session_id
        self.details = details
