"""The learning loop in-process: nudge counters, a background review that writes memory beside the
session (shown and stored for replay, history untouched, never holding the next turn), and writes
held as proposals in default mode until the user answers at their next prompt."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
import pytest

from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
from acp_hermes.core.review import MEMORY_REVIEW, Nudges
from acp_hermes.core.session import Session
from acp_hermes.core.transcript import ToolOutcome, stored_messages
from acp_hermes.core.turn import nudge
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.types import ModelRequest, StreamEvent
from acp_hermes.permissions.gate import PermissionQuestion
from tests.support.fake_provider import FakeProvider, text, tool_call
from tests.support.sessions import Env

pytestmark = pytest.mark.anyio
REMEMBER = tool_call("memory", {"action": "add", "target": "user", "content": "Prefers tabs over spaces."})


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([(set(), 0), (set(), 0)], [(False, False), (True, False)]),  # memory every 2 user turns
        ([(set(), 2), (set(), 1)], [(False, False), (True, True)]),  # skills every 3 tool-using calls
        ([(set(), 0), ({"memory"}, 0), (set(), 0)], [(False, False), (False, False), (False, False)]),
        ([(set(), 3), ({"skill_manage"}, 5), (set(), 1)], [(False, True), (True, False), (False, False)]),
    ],
)
def test_nudges_fire_on_their_intervals_and_reset_when_the_agent_saves_on_its_own(
    turns: list[tuple[set[str], int]], expected: list[tuple[bool, bool]]
) -> None:
    nudges = Nudges(memory_interval=2, skill_interval=3)
    assert [nudges.after_turn(used, calls) for used, calls in turns] == expected


def test_an_interval_of_zero_never_fires() -> None:
    nudges = Nudges(memory_interval=0, skill_interval=0)
    assert {nudges.after_turn(set(), 50) for _ in range(20)} == {(False, False)}


class Spawner:
    """Collects the background reviews a session starts, to run them when the test says. Its other
    background job, naming the session after its first exchange, is dropped: these tests script
    only the conversation's and the reviews' model calls."""

    def __init__(self) -> None:
        self.jobs: list[Coroutine[Any, Any, None]] = []

    def __call__(self, job: Coroutine[Any, Any, None]) -> None:
        if getattr(job, "__name__", "") == "_review":
            self.jobs.append(job)
        else:
            job.close()


async def reviewing_session(env: Env, mode: str) -> tuple[Session, Spawner]:
    spawner = Spawner()
    session = await env.manager(spawn=spawner).create(env.cwd, ())
    session.set_choice("mode", mode)
    session.services.nudges = Nudges(memory_interval=2, skill_interval=0)
    return session, spawner


async def two_turns(env: Env, session: Session) -> None:
    env.provider.script(text("one"), text("two"))
    for n in range(2):
        assert await session.prompt([TextPart(f"turn {n}")]) == "end_turn"


async def test_a_review_writes_memory_beside_the_session_and_shows_what_it_wrote(env: Env) -> None:
    session, spawner = await reviewing_session(env, "accept-edits")
    await two_turns(env, session)
    assert len(spawner.jobs) == 1  # after the second user turn
    history = list(session.state.transcript.messages)
    env.provider.script(REMEMBER, text("Saved."))
    await spawner.jobs[0]

    assert "Prefers tabs over spaces." in (env.runtime.paths.memories / "USER.md").read_text()
    review_request = env.provider.requests[-2]
    assert MEMORY_REVIEW in str(review_request.messages[-1])
    assert [t["name"] for t in env.provider.bodies[-2]["tools"]] == ["memory", "skills_list", "skill_view",
                                                                      "skill_manage"]
    assert session.state.transcript.messages == history  # the conversation itself is untouched
    started = [e for e in env.log.events if isinstance(e, ToolCallStarted) and e.title.startswith("Review: ")]
    assert [e.name for e in started] == ["memory"]
    finished = [e for e in env.log.events if isinstance(e, ToolCallFinished) and e.call_id == started[0].call_id]
    assert finished[0].status == "completed"
    replayed = [m for m in stored_messages(env.runtime.db.messages(session.id)) if isinstance(m, ToolOutcome)]
    assert [(m.name, m.title.startswith("Review: ")) for m in replayed] == [("memory", True)]
    record = env.runtime.db.get_session(session.id)
    assert record is not None and record.api_call_count == 4  # the review's two calls are charged too


class HeldReviewProvider(FakeProvider):
    """Holds the review requests ``holds`` picks until ``release`` is set; ordinary turns stream at once."""

    holds: Callable[[ModelRequest], bool]
    release: anyio.Event

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if MEMORY_REVIEW in str(request.messages) and self.holds(request):
            await self.release.wait()
        async for event in super().stream(request):
            yield event


def held_reviews(env: Env, holds: Callable[[ModelRequest], bool]) -> HeldReviewProvider:
    provider = HeldReviewProvider()
    provider.holds, provider.release = holds, anyio.Event()
    env.runtime._provider = provider  # type: ignore[assignment]
    env.provider = provider
    return provider


def its_first_request(request: ModelRequest) -> bool:
    return MEMORY_REVIEW in str(request.messages[-1])


async def test_a_running_review_never_holds_the_next_turn(env: Env) -> None:
    provider = held_reviews(env, its_first_request)
    session, spawner = await reviewing_session(env, "accept-edits")
    await two_turns(env, session)
    provider.script(REMEMBER, text("Saved."))
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: spawner.jobs[0])
        await anyio.wait_all_tasks_blocked()  # the review is waiting for the model
        provider.replies.appendleft(text("three"))  # the next turn's reply comes first
        with anyio.fail_after(5):
            assert await session.prompt([TextPart("turn 2")]) == "end_turn"
        assert not (env.runtime.paths.memories / "USER.md").exists()  # the review is still under way
        provider.release.set()
    assert "Prefers tabs" in (env.runtime.paths.memories / "USER.md").read_text()


class Answering:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.questions: list[PermissionQuestion] = []

    async def ask(self, question: PermissionQuestion) -> str:
        self.questions.append(question)
        return self.answer


@pytest.mark.parametrize(("answer", "saved"), [("allow_once", True), ("reject_once", False)])
async def test_in_default_mode_a_reviews_write_waits_for_the_users_next_prompt(
    env: Env, answer: str, saved: bool
) -> None:
    session, spawner = await reviewing_session(env, "default")
    await two_turns(env, session)
    env.provider.script(REMEMBER, text("Held."))
    await spawner.jobs[0]
    assert not (env.runtime.paths.memories / "USER.md").exists() and len(session.services.proposals) == 1

    asker = Answering(answer)
    session.services.gate.asker = asker
    env.provider.script(text("three"))
    assert await session.prompt([TextPart("turn 2")]) == "end_turn"
    assert len(asker.questions) == 1 and asker.questions[0].title.startswith("Proposed by a review: ")
    assert asker.questions[0].display and "Prefers tabs" in str(asker.questions[0].display)
    assert ((env.runtime.paths.memories / "USER.md").exists() and "Prefers tabs" in
            (env.runtime.paths.memories / "USER.md").read_text()) is saved
    assert session.services.proposals == []


async def test_a_held_write_is_offered_at_the_next_prompt_while_its_review_goes_on(env: Env) -> None:
    provider = held_reviews(env, lambda request: not its_first_request(request))  # the one after its write
    session, spawner = await reviewing_session(env, "default")
    await two_turns(env, session)
    provider.script(REMEMBER, text("Held."))
    asker = Answering("allow_once")
    session.services.gate.asker = asker
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: spawner.jobs[0])
        await anyio.wait_all_tasks_blocked()  # the write was held; the review waits for its next reply
        provider.replies.appendleft(text("three"))
        with anyio.fail_after(5):
            assert await session.prompt([TextPart("turn 2")]) == "end_turn"
        assert [q.title.startswith("Proposed by a review: ") for q in asker.questions] == [True]
        provider.release.set()
    assert "Prefers tabs" in (env.runtime.paths.memories / "USER.md").read_text()


async def test_reviews_that_overlap_both_finish_and_close_cancels_them(env: Env) -> None:
    session, spawner = await reviewing_session(env, "accept-edits")
    session.services.nudges = Nudges(memory_interval=1, skill_interval=0)
    await two_turns(env, session)
    assert len(spawner.jobs) == 2
    saved = iter(["Uses tabs.", "Works on the parser."])

    def review_reply(request: ModelRequest) -> list[StreamEvent]:
        if "tool_result" in str(request.messages[-1]):
            return text("Saved.")
        return tool_call("memory", {"action": "add", "target": "user", "content": next(saved)})

    env.provider.script(*[review_reply] * 4)
    async with anyio.create_task_group() as group:
        for job in spawner.jobs:
            group.start_soon(lambda job=job: job)
    profile = (env.runtime.paths.memories / "USER.md").read_text()
    assert "Uses tabs." in profile and "Works on the parser." in profile

    blocked = HeldReviewProvider()
    blocked.release = anyio.Event()
    env.runtime._provider = blocked  # type: ignore[assignment]
    blocked.script(REMEMBER)
    spawner.jobs.clear()
    nudge(session.state, session.services, set(), 0)
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: spawner.jobs[0])
        await anyio.wait_all_tasks_blocked()
        session.close()  # the waiting review is cancelled with the session
    assert "Prefers tabs" not in (env.runtime.paths.memories / "USER.md").read_text()
