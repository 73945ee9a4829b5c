"""Context compression: boundaries, pruning, the summary request, the new history and the flush.

Histories are checked by the rules the fake provider enforces (the request body the provider would
build, refused as the API would by ``request_problem``), plus strict role alternation and no result
that ``repaired`` had to invent.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest

from acp_hermes.core.compression import (
    FLUSH_INSTRUCTION,
    SUMMARY_MARKER,
    SUMMARY_TEMPLATE,
    CompressionPlan,
    compressed_history,
    estimate_tokens,
    plan_compression,
    previous_summary,
    prune_old_tool_outputs,
    should_compress,
    summary_budget,
    summary_request,
)
from acp_hermes.core.history import INTERRUPTED
from acp_hermes.model.messages import Message, Text
from acp_hermes.model.provider import request_body
from acp_hermes.model.types import ModelRequest
from acp_hermes.testing.request_checks import request_problem
from tests.support.wire import typed

_ids = itertools.count()


# --- building histories ----------------------------------------------------------------------------


def message(wire: dict[str, Any]) -> Message:
    [made] = typed([wire])
    return made


def user(text: str) -> Message:
    return message({"role": "user", "content": [{"type": "text", "text": text}]})


def reply(text: str) -> Message:
    return message({"role": "assistant", "content": [{"type": "text", "text": text}]})


def calls(*names: str, thought: str = "", arguments: dict[str, Any] | None = None) -> Message:
    blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": thought, "signature": "sig"}] if thought else []
    blocks += [{"type": "tool_use", "id": f"call-{next(_ids)}", "name": n, "input": arguments or {"path": f"/w/{n}"}}
               for n in names]
    return message({"role": "assistant", "content": blocks})


def results(call_message: Message, size: int = 40, *, is_error: bool = False) -> Message:
    ids = [call.id for call in call_message.calls()]
    error = {"is_error": True} if is_error else {}
    return message({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "x" * size,
                                                  **error} for i in ids]})


def text_turn(size: int = 40) -> list[Message]:
    return [user("q" * size), reply("a" * size)]


def tool_turn(*names: str, size: int = 40) -> list[Message]:
    call = calls(*names)
    return [user("do it"), call, results(call, size), reply("done")]


def history_of(turns: int, *, first: list[Message] | None = None, size: int = 40) -> list[Message]:
    """A first exchange and then ``turns`` turns, alternating text and tool turns."""
    messages = list(first) if first is not None else text_turn()
    for n in range(turns):
        messages += text_turn(size) if n % 2 else tool_turn("read", "grep", size=size)
    return messages


# --- checking histories ----------------------------------------------------------------------------


def assert_valid(history: list[Message]) -> None:
    body = request_body(ModelRequest(model="claude-test", system="system", messages=history))
    assert request_problem(body) is None
    roles = [m.role for m in history]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    for message in history:
        kinds = [b.kind for b in message.blocks]
        assert kinds, "no empty messages"
        assert kinds == sorted(kinds, key=lambda k: k != "tool_result"), "results come first"
        assert all(b.content != INTERRUPTED for b in message.results()), "a pair was broken"


def pairs_within(section: list[Message]) -> bool:
    """Every call in ``section`` is answered in it, and every result answers a call in it."""
    used = {call.id for m in section for call in m.calls()}
    answered = {result.tool_use_id for m in section for result in m.results()}
    return used == answered


def summary_blocks(history: list[Message]) -> list[str]:
    texts = [b.text for m in history for b in m.blocks if isinstance(b, Text)]
    return [t for t in texts if t.startswith(SUMMARY_MARKER)]


def has_results(message: Message) -> bool:
    return bool(message.results())


# --- when ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "window", "threshold", "expected"),
    [
        (99_999, 200_000, 0.5, False),
        (100_000, 200_000, 0.5, True),
        (150_000, 200_000, 0.8, False),
        (170_000, 200_000, 0.8, True),
        (10, 0, 0.5, False),  # an unknown window never triggers
    ],
)
def test_should_compress(used: int, window: int, threshold: float, expected: bool) -> None:
    assert should_compress(used, window, threshold) is expected


@pytest.mark.parametrize(
    ("given", "tokens"),
    [
        (user("x" * 400), 100),
        ({"role": "user", "content": "x" * 401}, 101),  # plain string content, rounded up
        ({"role": "assistant", "content": [{"type": "thinking", "thinking": "t" * 80, "signature": "s"}]}, 20),
        ({"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "read", "input": {"p": "x" * 30}}]},
         (4 + len('{"p": "' + "x" * 30 + '"}') + 3) // 4),
        ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "r" * 800}]}, 200),
        ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c",
                                       "content": [{"type": "text", "text": "r" * 40}]}]}, 10),
        ({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "A" * 10**6}}]}, 1_600),
    ],
)
def test_estimate_tokens_counts_text_thinking_calls_and_results(given: Message | dict[str, Any], tokens: int) -> None:
    assert estimate_tokens([given if isinstance(given, Message) else message(given)]) == tokens


@pytest.mark.parametrize(
    ("middle", "window", "expected"),
    [(100_000, 200_000, 10_000), (5_000, 200_000, 2_000), (30_000, 200_000, 6_000), (500_000, 1_000_000, 12_000)],
)
def test_summary_budget_scales_with_what_it_replaces(middle: int, window: int, expected: int) -> None:
    assert summary_budget(middle, window) == expected


# --- where -----------------------------------------------------------------------------------------


def test_first_exchange_is_kept_whole_with_its_tool_results() -> None:
    first = tool_turn("read", "grep")[:3]  # user, the reply with two calls, their results
    messages = history_of(20, first=first)
    plan = plan_compression(messages, tail_budget_tokens=0, min_tail_messages=20, min_middle_tokens=0)
    assert plan is not None
    assert plan.head == first
    assert pairs_within(plan.head) and pairs_within(plan.middle) and pairs_within(plan.tail)


def test_first_exchange_without_tools_is_the_prompt_and_its_reply() -> None:
    messages = history_of(20)
    plan = plan_compression(messages, tail_budget_tokens=0, min_middle_tokens=0)
    assert plan is not None
    assert plan.head == messages[:2]


@pytest.mark.parametrize("min_tail", [1, 5, 20, 21, 22, 23])
def test_tail_keeps_at_least_the_minimum_and_never_starts_on_results(min_tail: int) -> None:
    messages = history_of(30)
    plan = plan_compression(messages, tail_budget_tokens=0, min_tail_messages=min_tail, min_middle_tokens=0)
    assert plan is not None
    assert min_tail <= len(plan.tail) <= min_tail + 1
    assert not has_results(plan.tail[0])
    assert pairs_within(plan.middle) and pairs_within(plan.tail)


def test_a_minimum_landing_on_results_takes_the_call_too() -> None:
    messages = history_of(30)
    start = next(n for n in range(len(messages) - 20, 0, -1) if has_results(messages[n]))
    plan = plan_compression(messages, tail_budget_tokens=0, min_tail_messages=len(messages) - start,
                            min_middle_tokens=0)
    assert plan is not None
    assert plan.tail_start == start - 1
    assert plan.tail[0].calls()


@pytest.mark.parametrize("budget", [2_000, 3_000, 5_000, 8_000])
def test_tail_grows_to_the_token_budget_and_stays_within_it(budget: int) -> None:
    messages = history_of(80, size=400)
    plan = plan_compression(messages, tail_budget_tokens=budget, min_tail_messages=4, min_middle_tokens=0)
    assert plan is not None
    assert len(plan.tail) > 4
    assert estimate_tokens(plan.tail) <= budget
    before = messages[plan.tail_start - 1 : plan.tail_start]
    if not has_results(before[0]):  # the budget stopped here, not an alignment step
        assert estimate_tokens(before + plan.tail) > budget
    assert not has_results(plan.tail[0])
    assert pairs_within(plan.tail)


def test_a_budget_landing_on_results_starts_the_tail_after_them() -> None:
    messages = history_of(40, size=400)
    cut = next(n for n in range(len(messages) - 12, 0, -1) if has_results(messages[n]))
    budget = estimate_tokens(messages[cut:])
    plan = plan_compression(messages, tail_budget_tokens=budget, min_tail_messages=4, min_middle_tokens=0)
    assert plan is not None
    assert plan.tail_start == cut + 1
    assert estimate_tokens(plan.tail) <= budget


@pytest.mark.parametrize(
    ("messages", "kwargs"),
    [
        (history_of(4), {"tail_budget_tokens": 0}),  # everything after the head fits in 20 messages
        (history_of(30), {"tail_budget_tokens": 10**9, "min_tail_messages": 1}),  # the budget holds it all
        (history_of(30), {"tail_budget_tokens": 0}),  # a middle too small to be worth a summary
        ([], {"tail_budget_tokens": 0}),
        ([reply("no user yet")], {"tail_budget_tokens": 0, "min_middle_tokens": 0}),
    ],
)
def test_nothing_worth_compressing(messages: list[Message], kwargs: dict[str, Any]) -> None:
    assert plan_compression(messages, **kwargs) is None


# --- pruning ---------------------------------------------------------------------------------------


def test_pruning_shortens_long_outputs_outside_the_tail_only() -> None:
    old_call, new_call = calls("read"), calls("read")
    old_long = results(old_call, 5_000, is_error=True)
    short_call = calls("grep")
    messages = [user("go"), old_call, old_long, short_call, results(short_call, 150),
                new_call, results(new_call, 5_000)]
    snapshot = list(messages)

    pruned = prune_old_tool_outputs(messages, protect_from=5, keep_chars=200)

    assert messages == snapshot, "the input is never modified"
    [old] = pruned[2].results()
    assert isinstance(old.content, str)
    assert old.content.startswith("[Older tool output pruned") and "200 of 5000" in old.content
    assert old.content.endswith("\n" + "x" * 200)
    assert len(old.content) < 400 and old.is_error is True and old.tool_use_id == old_call.calls()[0].id
    assert pruned[4] == messages[4], "a short output stays"
    assert pruned[6] == messages[6], "the protected tail stays"
    assert prune_old_tool_outputs(pruned, protect_from=5, keep_chars=100) == pruned, "pruned once is enough"


def test_pruning_handles_block_list_outputs() -> None:
    call = calls("screenshot")
    result = message({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.calls()[0].id,
                                                   "content": [{"type": "image", "source": {"type": "base64",
                                                                                            "data": "A"}},
                                                               {"type": "text", "text": "caption"}]}]})
    pruned = prune_old_tool_outputs([user("go"), call, result], protect_from=3, keep_chars=10)
    assert pruned[2].results()[0].text.endswith("\n[image]\nca")


def test_a_plan_prunes_without_moving_its_boundaries() -> None:
    messages = history_of(30, size=3_000)
    plan = plan_compression(messages, tail_budget_tokens=0, min_middle_tokens=0)
    assert plan is not None
    pruned = plan.with_old_outputs_pruned()
    assert (pruned.head_end, pruned.tail_start) == (plan.head_end, plan.tail_start)
    assert pruned.tail == plan.tail
    outputs = [b.text for m in pruned.head + pruned.middle for b in m.results()]
    assert outputs and all(len(o) < 400 for o in outputs)


# --- the summary request ---------------------------------------------------------------------------


def test_summary_request_renders_the_middle_compactly() -> None:
    call = calls("read_file", thought="secret reasoning", arguments={"path": "/w/app.py", "blob": "b" * 1_000})
    middle = [user("Fix the parser"), call, results(call, 5_000), reply("The parser is fixed.")]
    system, prompt = summary_request(middle, None, None)
    assert "summary" in system.lower()
    assert "User: Fix the parser" in prompt
    assert "Assistant called read_file" in prompt and "/w/app.py" in prompt
    assert "b" * 1_000 not in prompt and "x" * 1_000 not in prompt, "arguments and results are cut short"
    assert "Tool read_file returned: " in prompt
    assert "secret reasoning" not in prompt
    assert "Assistant: The parser is fixed." in prompt
    for section in ("## Goal", "## Constraints & Preferences", "### Done", "### In Progress", "### Blocked",
                    "## Key Decisions", "## Relevant Files", "## Next Steps", "## Critical Context"):
        assert section in prompt
    assert SUMMARY_TEMPLATE in prompt
    assert "<previous-summary>" not in prompt


def test_summary_request_updates_a_previous_summary_and_keeps_the_focus() -> None:
    _, prompt = summary_request([user("more"), reply("ok")], "## Goal\nShip v2", "the database schema")
    assert "<previous-summary>\n## Goal\nShip v2\n</previous-summary>" in prompt
    assert "Update that summary" in prompt and "In Progress to Done" in prompt
    assert "the database schema" in prompt


def test_summary_update_flow_across_two_compressions() -> None:
    messages = history_of(30)
    first = plan_compression(messages, tail_budget_tokens=0, min_middle_tokens=0)
    assert first is not None and previous_summary(messages) is None
    once = compressed_history(first, "## Goal\nFirst summary")
    assert previous_summary(once) == "## Goal\nFirst summary"

    grown = once + history_of(15)[2:]
    second = plan_compression(grown, tail_budget_tokens=0, min_middle_tokens=0)
    assert second is not None
    _, prompt = summary_request(second.middle, previous_summary(grown), None)
    assert prompt.count("First summary") == 1, "passed as the previous summary, not again in the middle"
    assert "<previous-summary>\n## Goal\nFirst summary" in prompt

    twice = compressed_history(second, "## Goal\nSecond summary")
    assert_valid(twice)
    assert len(summary_blocks(twice)) == 1
    assert previous_summary(twice) == "## Goal\nSecond summary"


# --- the new history -------------------------------------------------------------------------------


def _seam_case(head_ends_with_results: bool, tail_starts_with_user: bool) -> CompressionPlan:
    head = tool_turn("read")[:3] if head_ends_with_results else text_turn()
    middle = history_of(4)[2:]
    call = calls("grep")
    tail_opening = [user("next"), call] if tail_starts_with_user else [call]
    tail = [*tail_opening, results(call), reply("ok"), user("and then?"), reply("that's it")]
    messages = head + middle + tail
    return CompressionPlan(tuple(messages), len(head), len(head) + len(middle))


@pytest.mark.parametrize(
    ("head_ends_with_results", "tail_starts_with_user", "summary_role", "summary_shares_with"),
    [
        (False, True, "user", "the tail's first message"),
        (False, False, "user", None),
        (True, False, "user", "the head's results"),
        (True, True, "assistant", None),
    ],
)
def test_the_summary_keeps_roles_alternating_at_both_seams(
    head_ends_with_results: bool, tail_starts_with_user: bool, summary_role: str, summary_shares_with: str | None
) -> None:
    plan = _seam_case(head_ends_with_results, tail_starts_with_user)
    history = compressed_history(plan, "  the summary  ")
    assert_valid(history)
    [holder] = [m for m in history if summary_blocks([m])]
    assert holder.role == summary_role
    others = [b for b in holder.blocks if not (isinstance(b, Text) and b.text.startswith(SUMMARY_MARKER))]
    first, last = holder.blocks[0], holder.blocks[-1]
    if summary_shares_with == "the tail's first message":
        assert isinstance(first, Text) and first.text.startswith(SUMMARY_MARKER)
        assert others == list(plan.tail[0].blocks)
    elif summary_shares_with == "the head's results":
        assert others == list(plan.head[-1].blocks) and isinstance(last, Text) and last.text.startswith(SUMMARY_MARKER)
    else:
        assert others == []
    assert history[: len(plan.head) - 1] == plan.head[:-1], "the head is kept verbatim"
    assert history[-4:] == plan.tail[-4:], "the tail is kept verbatim"
    assert previous_summary(history) == "the summary"


def test_an_old_summary_in_the_head_is_replaced_not_repeated() -> None:
    plan = _seam_case(head_ends_with_results=True, tail_starts_with_user=False)
    once = compressed_history(plan, "old")
    assert summary_blocks(once[:3]), "the summary went into the head's results"
    grown = once + history_of(20)[2:]
    again = plan_compression(grown, tail_budget_tokens=0, min_middle_tokens=0)
    assert again is not None and again.head == once[:3]
    twice = compressed_history(again, "new")
    assert_valid(twice)
    assert len(summary_blocks(twice)) == 1 and previous_summary(twice) == "new"


def test_a_head_with_an_unanswered_call_gets_its_result() -> None:
    call = calls("read")
    messages = [user("go"), call, *history_of(6)[2:], user("now"), reply("ok")]
    plan = CompressionPlan(tuple(messages), 2, len(messages) - 2)
    history = compressed_history(plan, "s")
    body = request_body(ModelRequest(model="claude-test", system="system", messages=history))
    assert request_problem(body) is None
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_compressing_does_not_modify_the_plan() -> None:
    messages = history_of(30)
    snapshot = list(messages)
    plan = plan_compression(messages, tail_budget_tokens=0, min_middle_tokens=0)
    assert plan is not None
    compressed_history(plan.with_old_outputs_pruned(), "s")
    assert messages == snapshot


# --- the memory flush ------------------------------------------------------------------------------


def test_the_flush_instruction_asks_for_the_memory_tool_and_a_short_reply() -> None:
    assert "memory tool" in FLUSH_INSTRUCTION and "compacted" in FLUSH_INSTRUCTION
    assert "short sentence" in FLUSH_INSTRUCTION


# --- properties over generated conversations -------------------------------------------------------


def random_conversation(rng: random.Random, ids: Iterator[int]) -> list[Message]:
    """Text turns and tool turns (1-3 rounds of 1-3 parallel calls) of random sizes."""
    messages: list[Message] = []
    for _ in range(rng.randint(1, 45)):
        messages.append(user("u" * rng.randint(5, 1_500)))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.3:
                blocks.append({"type": "thinking", "thinking": "t" * rng.randint(5, 500), "signature": "s"})
            if rng.random() < 0.5:
                blocks.append({"type": "text", "text": "p" * rng.randint(5, 300)})
            call_ids = [f"call-{next(ids)}" for _ in range(rng.randint(1, 3))]
            blocks += [{"type": "tool_use", "id": i, "name": "tool", "input": {"n": i}} for i in call_ids]
            messages.append(message({"role": "assistant", "content": blocks}))
            messages.append(message({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": "r" * rng.randint(1, 4_000)} for i in call_ids
            ]}))
        messages.append(reply("a" * rng.randint(5, 1_500)))
    return messages


@pytest.mark.parametrize("seed", range(250))
def test_generated_conversations_compress_into_valid_histories(seed: int) -> None:
    rng = random.Random(seed)
    ids = itertools.count()
    messages = random_conversation(rng, ids)
    budget, min_tail = rng.choice([0, 500, 2_000, 8_000, 30_000]), rng.choice([1, 3, 8, 20])
    plan = plan_compression(messages, tail_budget_tokens=budget, min_tail_messages=min_tail,
                            min_middle_tokens=rng.choice([0, 1_000]))
    if plan is None:
        return
    first_has_tools = bool(messages[1].calls())
    assert plan.head == messages[: 3 if first_has_tools else 2]
    for section in (plan.head, plan.middle, plan.tail):
        assert pairs_within(section), "a tool_use was split from its result"
    assert len(plan.tail) >= min_tail
    assert estimate_tokens(plan.tail) <= budget or len(plan.tail) <= min_tail + 1
    assert not has_results(plan.tail[0])

    once = compressed_history(plan.with_old_outputs_pruned(), f"summary {seed}")
    assert_valid(once)
    assert len(summary_blocks(once)) == 1
    assert once[len(once) - len(plan.tail) + 1 :] == plan.tail[1:], "the tail is kept verbatim"

    grown = once + random_conversation(rng, ids)
    again = plan_compression(grown, tail_budget_tokens=budget, min_tail_messages=min_tail, min_middle_tokens=0)
    if again is None:
        return
    assert previous_summary(grown) == f"summary {seed}"
    twice = compressed_history(again, "updated")
    assert_valid(twice)
    assert len(summary_blocks(twice)) == 1 and previous_summary(twice) == "updated"
