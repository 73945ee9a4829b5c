"""Steering: what the user sends into a running turn, for the model to read at its next request.

The session opens the box when a model turn starts and closes it when the turn ends; in between, a
steer (``_session/steering``, ``/steer``) waits here. The agent loop takes what is waiting right
before each model request, after the results of the calls that ran, and stores it as the user's
message there; a turn whose model has finished answers once more when a steer is still waiting.
What a turn that stopped early (cancelled, out of budget) never delivered is handed back by
``close``: the session carries it into the next turn. Nothing here awaits, so a steer is either
taken by the running turn or handed back, never lost between the two.
"""

from __future__ import annotations

from acp_hermes.core.user_prompt import PromptPart
from acp_hermes.model.messages import Block
from acp_hermes_memory.values import value


@value
class Steer:
    """One steer: the user's words as the model reads them (``core.attachments``; ``core.turn_input``
    puts the line in front that says when they came), as plain text, and part by part."""

    content: tuple[Block, ...]
    plain_text: str
    parts: tuple[PromptPart, ...]
    client_message_id: str | None = None


class Steering:
    """The steers waiting for the running turn's next model request."""

    def __init__(self) -> None:
        self._open = False
        self._waiting: list[Steer] = []

    @property
    def accepting(self) -> bool:
        """A model turn runs: a steer offered now reaches it."""
        return self._open

    @property
    def waiting(self) -> bool:
        return bool(self._waiting)

    def open(self) -> None:
        self._open = True

    def offer(self, steer: Steer) -> bool:
        """Queue ``steer`` for the running turn; False when none runs (the caller decides what then)."""
        if not self._open:
            return False
        self._waiting.append(steer)
        return True

    def take(self) -> list[Steer]:
        """What the next model request carries, in the order it was sent."""
        taken, self._waiting = self._waiting, []
        return taken

    def close(self) -> list[Steer]:
        """The turn ended: no more steers; what it did not deliver comes back."""
        self._open = False
        return self.take()
