"""The order a session's prompts are served in: the order they arrived, whatever each awaits first.

A prompt may await work before it is a turn (a skill loaded from disk, an archived skill offered back,
and soon the user's own hooks), and while it does, a later prompt must not overtake it, nor may a cancel
sent after it arrived be missed. So each prompt takes its ``Place`` the moment it arrives (no await in
between), and places take the session's turn lock in that order: a place waits until every place before
it has taken the lock or left the line.
"""

from __future__ import annotations

from collections import deque

import anyio


class Place:
    """One prompt's place in the line, and how many cancels the session had seen when it arrived."""

    __slots__ = ("epoch", "ready")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.ready: anyio.Event | None = None  # made by its own wait: nothing on session/new's way makes one


class PromptLine:
    def __init__(self) -> None:
        self._places: deque[Place] = deque()

    def arrive(self, epoch: int) -> Place:
        place = Place(epoch)
        self._places.append(place)
        return place

    async def wait_turn(self, place: Place) -> None:
        """Return once every place that arrived before ``place`` has taken the lock or left."""
        while self._places and self._places[0] is not place:
            place.ready = anyio.Event()
            await place.ready.wait()

    def leave(self, place: Place) -> None:
        """``place`` took the lock, or is no turn after all (a command, a refusal, a cancel): the next may go.
        Leaving twice is leaving once."""
        if place not in self._places:
            return
        first = self._places[0] is place
        self._places.remove(place)
        if first and self._places and self._places[0].ready is not None:
            self._places[0].ready.set()
