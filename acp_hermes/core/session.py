"""One session of one client: its prompts, steers, cancels and end, one turn at a time.

A session is three things of different lifetimes: what it is and has said (``state``: ``core.state``),
what it reaches outside itself (``services``: ``core.services``, built complete by
``core.sessions.SessionManager``, the only code that makes a session) and, while one runs, a turn
(``core.turn.Turn``). The ``Session`` itself holds the lock that serialises them.

Prompts are serialised per session: one that arrives while a turn runs waits and runs next (in
arrival order); ``cancel`` stops the running turn, its children and every prompt queued before it,
which all end ``cancelled``. What a prompt is (a slash command, a skill, a model turn) is decided by
``core.commands.handle``; ``prompt`` runs a model turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core.choices import MODE_OPTION, SessionChoices, apply_choice
from acp_hermes.core.events import SessionEnded
from acp_hermes.core.prompt_line import Place, PromptLine

if TYPE_CHECKING:
    from acp_hermes.core.compactor import Compaction
    from acp_hermes.core.lineage import SubagentSpec
    from acp_hermes.core.loop import StopReason
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState
    from acp_hermes.core.turn import Turn
    from acp_hermes.core.turn_input import Note
    from acp_hermes.core.user_prompt import PromptPart


class Session:
    """One session: its state, its services and the turn that runs now, if one does."""

    def __init__(self, state: SessionState, services: SessionServices) -> None:
        from acp_hermes.core.steering import Steering

        self.state = state
        self.services = services
        self.steering = Steering()  # what the user sends into the running turn (steer)
        self._steer_order = anyio.Lock()  # steers are converted one at a time, so they arrive in the order sent
        self._turn_lock: anyio.Lock | None = None  # made by the first prompt: session/new need not load anyio's backend
        self._turn: Turn | None = None  # the model turn running now
        self._cancel_epoch = 0
        self._line = PromptLine()  # prompts take the turn lock in the order they arrived

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def choices(self) -> SessionChoices:
        return self.state.choices

    @property
    def title(self) -> str | None:
        return self.state.title

    @property
    def subagent(self) -> SubagentSpec | None:
        return self.state.subagent

    @property
    def closed(self) -> bool:
        return self.services.closed

    @property
    def cancel_epoch(self) -> int:
        """Counts this session's cancels (and its close): a change means "stop what you started"."""
        return self._cancel_epoch

    # -- choices

    def set_choice(self, option_id: str, value: Any) -> None:
        apply_choice(self.state.choices, self.services.settings, option_id, value)
        self.services.gate.mode = self.state.choices.mode
        self._persist_choices()
        if option_id == MODE_OPTION:  # a mode switched mid-delegation holds for the running children too
            for child in self.services.children.children_of(self.id):
                child.set_choice(option_id, value)

    def set_budget(self, name: str, value: float | None, *, reset: bool = False) -> None:
        """``/budget``: this session's own limit ``name`` (None: no limit); ``reset``: the config's again."""
        if reset:
            self.state.choices.budget.clear()
        else:
            self.state.choices.budget[name] = value
        self._persist_choices()

    def _persist_choices(self) -> None:
        choices = self.state.choices
        self.services.db.update_session(self.id, mode=choices.mode.value, model=choices.model,
                                        model_config=choices.as_config())

    # -- turns

    def arrive(self) -> Place:
        """A prompt's place in line, taken as it arrives (before it awaits anything): its turn comes in
        arrival order, and a cancel sent after it ends it. ``prompt`` takes it; ``leave`` gives it up."""
        return self._line.arrive(self._cancel_epoch)

    def leave(self, place: Place) -> None:
        self._line.leave(place)

    async def prompt(self, parts: Sequence[PromptPart], client_message_id: str | None = None, *,
                     place: Place | None = None, notes: Sequence[Note] = ()) -> StopReason:
        """Run one prompt to its end; queued behind a running turn if there is one. ``client_message_id``:
        the client's id for it, stored with it (rewind points name it); ``place``: its place in line,
        taken when it arrived (now, if not given); ``notes``: what goes to the model with it (a hook's context)."""
        from acp_hermes.core.turn import Turn

        place = place or self.arrive()
        try:
            await self._line.wait_turn(place)
            async with self.exclusive():
                self._line.leave(place)
                epoch = place.epoch
                if epoch != self._cancel_epoch or self.closed:
                    return "cancelled"
                self._turn = Turn(self.state, self.services, self.steering, parts, client_message_id,
                                  cancelled=lambda: epoch != self._cancel_epoch or self.closed, notes=notes)
                try:
                    return await self._turn.run()
                finally:
                    self._turn = None
        finally:
            self._line.leave(place)  # cancelled while it waited in line

    async def steer(self, parts: Sequence[PromptPart], client_message_id: str | None = None) -> bool:
        """Send ``parts`` into the running turn: the model reads them at its next request. False when no
        model turn runs (nothing was taken: the caller decides whether to start one)."""
        from acp_hermes.core.attachments import convert_prompt
        from acp_hermes.core.steering import Steer

        if not self.steering.accepting:
            return False
        async with self._steer_order:
            converted = await anyio.to_thread.run_sync(convert_prompt, parts, self.state.cwd)
            return self.steering.offer(Steer(tuple(converted.content), converted.plain_text, tuple(parts),
                                             client_message_id))

    async def compact(self, focus: str | None = None) -> Compaction:
        """``/compact``: compact now (after a running turn), whatever the context's size."""
        from acp_hermes.core.turn import catch_up, compact

        async with self.exclusive():
            await catch_up(self.state, self.services)
            compaction = await compact(self.state, self.services, focus, manual=True)
        await self.report_usage()
        return compaction

    async def report_usage(self) -> None:
        await self.services.report_usage(self.state)

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """Hold the session between turns: a rollback waits for the running turn and keeps the next waiting."""
        if self._turn_lock is None:
            self._turn_lock = anyio.Lock()
        async with self._turn_lock:
            yield

    @property
    def busy(self) -> bool:
        """A turn runs (or a rollback holds the session)."""
        return self._turn_lock is not None and self._turn_lock.locked()

    async def wait_until_idle(self) -> None:
        """Return once no turn runs (a cancelled one has finished storing what it had)."""
        if self._turn_lock is not None:
            async with self._turn_lock:
                pass

    def cancel(self) -> None:
        """Stop the running turn, its children and every prompt queued before now; idle → nothing happens."""
        self._cancel_epoch += 1
        for child in self.services.children.children_of(self.id):
            child.cancel()
        if self._turn is not None:
            self._turn.cancel()

    def close(self, *, end_hooks: bool = True) -> None:
        """End the session: its servers, background commands and reviews stop, and so does its turn.
        ``end_hooks``: start its SessionEnd hooks beside the close (False: the closer awaits them itself)."""
        self.services.publish(SessionEnded(list(self.state.transcript.messages)))
        if end_hooks:
            self.services.hooks.ended(self.services.spawn)
        self.services.close()
        self.cancel()
