"""Prompt-cache efficiency of a scripted 30-turn session through the real stdio server.

    .venv/bin/python bench/cache_efficiency.py            # 30 turns
    .venv/bin/python bench/cache_efficiency.py --turns 60

The server runs as an editor would start it (``python -m acp_hermes`` over stdio, driven by the ACP
SDK's client through tests/support/acp_harness.py) against the scripted model with the provider's prefix
cache simulated (``FakeAnthropic(simulate_cache=True)``): every request's input is split into
uncached, cache-written and cache-read tokens at exactly the breakpoints the product set. The
session mixes plain text turns with tool turns (read_file, todo, search_files), each tool turn
being two model requests. Reported per turn: model requests, prompt tokens (all input: uncached,
written and read) and the share read from the cache; then the overall share from turn 3 on
(turn 1 necessarily writes the cache first).

Target: >= 90 % of input tokens served from the cache from turn 3 on.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from acp_hermes.testing.scripted_model import Reply, Usage  # noqa: E402
from tests.support.fake_anthropic import CacheAccount, FakeAnthropic, text_reply, tool_reply  # noqa: E402

if TYPE_CHECKING:
    from tests.support.acp_harness import AgentProcess

TURNS = 30
FIRST_MEASURED_TURN = 3
TARGET_READ_SHARE = 0.90
SOURCE_FILES = 4


@dataclass(frozen=True)
class Turn:
    """One user prompt and the model replies it consumes, in order."""

    prompt: str
    replies: tuple[Reply, ...]


@dataclass(frozen=True)
class TurnFigures:
    """The cache accounting of one turn's model requests (the title request is not part of a turn)."""

    number: int
    accounts: tuple[CacheAccount, ...]

    @property
    def total(self) -> int:
        return sum(account.total for account in self.accounts)

    @property
    def cache_read(self) -> int:
        return sum(account.cache_read_input_tokens for account in self.accounts)

    @property
    def read_share(self) -> float:
        return self.cache_read / self.total if self.total else 0.0


def conversation_only(home: Path) -> None:
    """No background reviews: the figures are the conversation's own (reviews: bench/long_session.py)."""
    from tests.support.acp_harness import write_config

    write_config(home, "learning_loop: false\n")


def prepare_workspace(workspace: Path) -> None:
    """A few small source files for the read and search turns."""
    for number in range(SOURCE_FILES):
        body = "\n".join(
            f"def handler_{number}_{line}(request):\n    return {{'status': 'ok', 'line': {line}}}\n"
            for line in range(6)
        )
        path = workspace / "src" / f"module_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def scenario(turns: int = TURNS) -> list[Turn]:
    """Text turns and tool turns in rotation, with prompts and answers of everyday length."""
    out = []
    for number in range(1, turns + 1):
        module = f"src/module_{number % SOURCE_FILES}.py"
        answer = text_reply(
            f"Turn {number}: here is what I found. The handlers in {module} all return a status mapping; "
            "nothing there needs to change for this request, but the naming could be more consistent."
        )
        kind = number % 4
        if kind == 1:
            replies: tuple[Reply, ...] = (tool_reply("read_file", {"path": module}), answer)
            prompt = f"Turn {number}: please read {module} and tell me what its handlers return."
        elif kind == 2:
            todos = [{"id": str(n), "content": f"Step {n} of turn {number}", "status": "pending"} for n in range(3)]
            replies = (tool_reply("todo", {"todos": todos}), answer)
            prompt = f"Turn {number}: plan the clean-up of {module} in three steps."
        elif kind == 3:
            replies = (tool_reply("search_files", {"pattern": f"handler_{number % SOURCE_FILES}_"}), answer)
            prompt = f"Turn {number}: where are the handlers of module {number % SOURCE_FILES} defined?"
        else:
            replies = (answer,)
            prompt = f"Turn {number}: summarise what we have looked at so far in two sentences."
        out.append(Turn(prompt, replies))
    return out


async def play(agent: AgentProcess, fake: FakeAnthropic, session_id: str, turns: Sequence[Turn]) -> list[TurnFigures]:
    """Run every turn in ``session_id``; the first is followed by the title request (scripted here)."""
    figures = []
    for number, turn in enumerate(turns, start=1):
        fake.script(*turn.replies)
        if number == 1:
            # A free title keeps the session's figures those of the conversation alone.
            fake.script_auxiliary(text_reply("Cache efficiency walkthrough", usage=Usage(0, 0)))
        start = len(fake.requests)
        stop = await agent.prompt(session_id, turn.prompt)
        if stop != "end_turn":
            raise RuntimeError(f"turn {number} ended with {stop!r}")
        end = len(fake.requests)
        if number == 1:
            await agent.wait_for_update(session_id, "session_info_update")
        figures.append(TurnFigures(number, tuple(_accounts(fake, start, end))))
    return figures


def _accounts(fake: FakeAnthropic, start: int, end: int) -> list[CacheAccount]:
    """The cache accounts of the streamed (conversation) requests in ``[start, end)``."""
    assert fake.cache is not None, "FakeAnthropic(simulate_cache=True) is required"
    requests = fake.requests
    accounts = fake.cache.accounts
    if len(accounts) != len(requests):
        raise RuntimeError("every request must have been answered with a message to align cache accounts")
    return [accounts[index] for index in range(start, end) if requests[index].get("stream")]


def share_from(figures: Sequence[TurnFigures], first_turn: int = FIRST_MEASURED_TURN) -> float:
    measured = [turn for turn in figures if turn.number >= first_turn]
    total = sum(turn.total for turn in measured)
    return sum(turn.cache_read for turn in measured) / total if total else 0.0


async def run(turns: int) -> list[TurnFigures]:
    from tests.support.acp_harness import running_agent

    with tempfile.TemporaryDirectory(prefix="acp-hermes-cache-") as scratch, FakeAnthropic(simulate_cache=True) as fake:
        root = Path(scratch)
        prepare_workspace(root / "workspace")
        conversation_only(root / "hermes-home")
        async with running_agent(root, fake) as agent:
            session_id = await agent.new_session()
            return await play(agent, fake, session_id, scenario(turns))


def report(figures: Sequence[TurnFigures]) -> str:
    lines = [f"{'turn':>4} {'requests':>8} {'prompt tokens':>13} {'cache read':>10} {'read share':>10}"]
    for turn in figures:
        counts = f"{turn.number:>4} {len(turn.accounts):>8} {turn.total:>13,} {turn.cache_read:>10,}"
        lines.append(f"{counts} {turn.read_share:>10.1%}")
    overall = share_from(figures)
    verdict = "meets" if overall >= TARGET_READ_SHARE else "MISSES"
    lines.append(
        f"from turn {FIRST_MEASURED_TURN} on: {overall:.1%} of input tokens read from the cache "
        f"({verdict} the {TARGET_READ_SHARE:.0%} target); all turns: {share_from(figures, 1):.1%}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS, help=f"turns to play (default {TURNS})")
    args = parser.parse_args(argv)
    figures: list[Any] = anyio.run(run, args.turns)
    print(report(figures))
    return 0 if share_from(figures) >= TARGET_READ_SHARE else 1


if __name__ == "__main__":
    sys.exit(main())
