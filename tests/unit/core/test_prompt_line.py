"""Prompts take the session's turn in the order they arrived, whatever each awaits before it asks."""

from __future__ import annotations

import anyio
import pytest

from acp_hermes.core.prompt_line import Place, PromptLine

pytestmark = pytest.mark.anyio


async def test_places_are_served_in_arrival_order_though_the_later_ones_ask_first() -> None:
    line = PromptLine()
    first, second, third = line.arrive(0), line.arrive(0), line.arrive(0)
    served: list[str] = []

    async def take(name: str, place: Place, asked: anyio.Event) -> None:
        asked.set()
        await line.wait_turn(place)
        served.append(name)
        line.leave(place)

    async with anyio.create_task_group() as group:
        for name, place in (("third", third), ("second", second)):  # they ask before the first one does
            asked = anyio.Event()
            group.start_soon(take, name, place, asked)
            await asked.wait()
        await anyio.wait_all_tasks_blocked()
        assert served == []  # nobody overtakes the first, still busy before it asks
        await line.wait_turn(first)
        served.append("first")
        line.leave(first)
    assert served == ["first", "second", "third"]


async def test_a_place_that_leaves_without_a_turn_lets_the_next_go_and_leaving_twice_is_once() -> None:
    line = PromptLine()
    command, prompt = line.arrive(0), line.arrive(3)
    line.leave(command)  # a slash command: no turn
    line.leave(command)
    with anyio.fail_after(1):
        await line.wait_turn(prompt)
    assert prompt.epoch == 3
