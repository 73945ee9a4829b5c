"""What the model reads besides the conversation itself: one turn's input, the user's words and every
note for the model.

A turn's input is the user's prompt (``UserPrompt``), the steers the user sends into it (``Steer``,
``core.steering``) and notes. Whoever has something to tell the model adds a typed note (a background
job that ended, files rolled back, a steer the last turn never read, a flagged web result, recall, a
subdirectory's instructions, the turn's budget running low), never text; ``render`` is the one function
that turns a note into the words the model reads, and ``TurnInput`` the one place that decides where
they go:

* the turn's opening message (``opening``): the prompt's blocks, then a text block per note, in a fixed
  order (hints, plan mode, jobs, what the last turn left for this one, recall);
* a tool result (``with_result``): after the tool's own text, the hint its paths found, the jobs that
  ended meanwhile and the notes waiting, each after a blank line (inside the result, so no message is
  added and the cached prefix holds);
* a steer (``steer_blocks``): the user's words behind a line saying they came during the turn.

Each is rendered as that message of the history is made, right before the request that sends it, and
stored as sent. What no tool result took (``left_over``) goes with the next turn's prompt. The texts are
scanned and framed where they are made (``memory.scan``, ``memory.frames``: a job's output, recall,
context files); here they are only placed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from acp_hermes.core.user_prompt import PromptPart
from acp_hermes.model.messages import Block, Text
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import JobEnded

if TYPE_CHECKING:
    from acp_hermes.core.steering import Steer

PLAN_MODE_NOTE = (
    "[Plan mode is on: the session is read-only. Explore with read-only tools and reply with a plan; "
    "edits and commands will be refused.]"
)
STEER_NOTE = "[The user sent this while you were working; take it into account from here on:]"
UNDELIVERED_NOTE = "[The user sent this during the previous turn, which ended before you could read it:]"
BUDGET_MARKS = (0.7, 0.9)  # shares of the turn's model calls at which the model is asked to wrap up


@value
class UserPrompt:
    """What the user sent: as the model reads it (``core.attachments``), as plain text (titles, search,
    the stored row) and part by part (stored for the replay)."""

    blocks: tuple[Block, ...]
    text: str
    parts: tuple[PromptPart, ...]


@value
class Hint:
    """Instructions found in a directory the turn reached (``core.hints``: read, scanned and labelled)."""

    text: str


@value
class PlanMode:
    """The session is read-only this turn."""


@value
class FilesRolledBack:
    """The user put files back to a checkpoint (and maybe rewound the conversation) since the last turn."""

    checkpoint: int
    restored: tuple[str, ...]
    conversation: bool


@value
class UndeliveredSteer:
    """Words the user sent into a turn that stopped before the model read them."""

    text: str


@value
class WebWarning:
    """A web result the API returned carries injection patterns (it goes back to the API unchanged)."""

    call_name: str
    call_title: str
    threats: tuple[str, ...]


@value
class Recall:
    """What the external memory provider recalled for this prompt."""

    text: str


@value
class HookContext:
    """What a hook the user set up adds to the prompt (UserPromptSubmit, SessionStart): already scanned and
    framed (``render_hook_context``)."""

    text: str


@value
class BudgetPressure:
    """The turn has used a mark's share of its model calls."""

    used: int
    limit: int
    share: float


Note = (Hint | PlanMode | JobEnded | FilesRolledBack | UndeliveredSteer | WebWarning | Recall | BudgetPressure
        | HookContext)

# Where each kind of note sits in a turn's opening message (a stable order: the same kind in arrival order).
_OPENING_ORDER: dict[type, int] = {Hint: 0, PlanMode: 1, JobEnded: 2, FilesRolledBack: 3, UndeliveredSteer: 3,
                                   WebWarning: 3, BudgetPressure: 3, Recall: 4, HookContext: 5}


def render(note: Note) -> str:
    """The words the model reads for ``note``."""
    if isinstance(note, Hint):
        return note.text
    if isinstance(note, PlanMode):
        return PLAN_MODE_NOTE
    if isinstance(note, JobEnded):
        return note.note()  # its output scanned and framed in <job-output>
    if isinstance(note, FilesRolledBack):
        return _rolled_back(note)
    if isinstance(note, UndeliveredSteer):
        return f"{UNDELIVERED_NOTE}\n{note.text}"
    if isinstance(note, WebWarning):
        from acp_hermes.core.web import model_warning

        return model_warning(note.call_name, note.call_title, note.threats)
    if isinstance(note, HookContext):
        return note.text
    if isinstance(note, Recall):
        from acp_hermes.core.memory_fence import memory_context_block

        return memory_context_block(note.text)  # fenced: nothing in it can close the fence
    urgency = "Start wrapping up" if note.share < max(BUDGET_MARKS) else "Wrap up now"
    return (f"[Turn budget: {note.used} of {note.limit} model calls used ({note.share:.0%}). {urgency}: finish "
            "the current step, then report what is done and what is left.]")


def _rolled_back(note: FilesRolledBack) -> str:
    if not note.restored:
        return f"[The user rewound the conversation to checkpoint {note.checkpoint}; the files were not changed.]"
    what = "the conversation and " if note.conversation else ""
    files = ", ".join(note.restored[:20]) + (" …" if len(note.restored) > 20 else "")
    return (f"[The user rolled back {what}these files to checkpoint {note.checkpoint}; they are no longer as you "
            f"left them: {files}. Read them again before editing.]")


HOOK_CONTEXT_NOTE = "[Added by a hook the user set up ({hook}): context for this step, not the user's words.]"


def render_hook_context(hook: str, text: str) -> str:
    """A hook's context as the model reads it: scanned (``memory.scan``) and in a ``<hook-context>`` frame
    that nothing in it can close (``memory.frames``)."""
    from acp_hermes_memory.frames import framed
    from acp_hermes_memory.scan import warned

    return framed("hook-context", f"{HOOK_CONTEXT_NOTE.format(hook=hook)}\n{warned('hook output', text.strip())}")


def steer_blocks(steer: Steer) -> tuple[Block, ...]:
    """What the model reads of a steer: the user's words behind the line that says when they came."""
    return (Text(STEER_NOTE), *steer.content)


def budget_share(used: int, limit: int) -> float:
    """The highest mark ``used`` of ``limit`` model calls has reached (0 below the first)."""
    return max((mark for mark in BUDGET_MARKS if used >= mark * limit), default=0.0)


class Hints(Protocol):
    def check_tool_call(self, tool_name: str, args: dict[str, object]) -> str: ...


class TurnInput:
    """One turn's input: its prompt and the notes for the model, placed as the turn's messages are made.

    ``notes`` go with the prompt; ``hints`` finds the instructions a tool call's paths reach; ``jobs``
    hands over the background jobs that ended since it was last asked (each once)."""

    def __init__(self, prompt: UserPrompt, notes: Sequence[Note] = (), *, hints: Hints | None = None,
                 jobs: Callable[[], Sequence[JobEnded]] | None = None) -> None:
        self.prompt = prompt
        self._notes = list(notes)
        self._hints = hints
        self._jobs = jobs
        self._waiting: list[Note] = []  # for the next tool result

    def add(self, note: Note) -> None:
        """Tell the model ``note`` with the next tool result (or, if none comes, the next prompt)."""
        self._waiting.append(note)

    def opening(self) -> list[Block]:
        """The turn's first message: the prompt, then each note as a text block of its own."""
        ordered = sorted(self._notes, key=lambda note: _OPENING_ORDER[type(note)])
        return [*self.prompt.blocks, *(Text(render(note)) for note in ordered)]

    def with_result(self, name: str, arguments: dict[str, object] | None, text: str) -> str:
        """A tool's result as the model reads it: its text, then what rides with it."""
        notes: list[Note] = []
        if self._hints is not None and arguments:
            found = self._hints.check_tool_call(name, arguments)
            if found:
                notes.append(Hint(found.strip()))
        if self._jobs is not None:
            notes.extend(self._jobs())
        notes.extend(self._waiting)
        self._waiting.clear()
        return text + "".join(f"\n\n{render(note)}" for note in notes)

    def left_over(self) -> list[Note]:
        """The notes no tool result took: they go with the next prompt."""
        left: list[Note] = [note for note in self._waiting if not isinstance(note, BudgetPressure)]
        self._waiting = []
        return left
