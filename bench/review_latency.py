"""Whether a background review (the learning loop) adds latency to the next turn.

    .venv/bin/python bench/review_latency.py                   # 20 measured turns, 3 rounds
    .venv/bin/python bench/review_latency.py --turns 50 --rounds 5
    .venv/bin/python bench/review_latency.py --back-to-back    # prompts at once, 1 s reviews

Two configurations of the real stdio server (``python -m acp_hermes``, driven through
tests/support/acp_harness.py) against the scripted model: ``memory_nudge_interval: 1`` (a memory
review starts after every turn) and ``learning_loop: false`` (never); skill nudges are off in both.
The next prompt is sent as soon as the previous turn ended. The review's model call is recognised
by its last user message (it holds ``core.review.MEMORY_REVIEW``) and answered with a slow stream
("Nothing to save.", its events spread over ``--review-seconds``), so it is still streaming while
the next turn starts and gets its first chunk. Each turn's reply streams too, ``--turn-chunks``
deltas with ``--turn-event-ms`` between the stream's events (so its first delta leaves the fake
model 3 event gaps after the request, the same in both configurations), which makes a turn outlast
the review that started before it: the server runs one review per session at a time (see below),
so every turn gets its own review only if the previous one has ended by the time the turn does.
``--back-to-back`` instead answers turns at once and streams each review for 1 s, the case where
reviews pile up.

Measured per turn: from the moment ``session/prompt`` left the client to the arrival of the turn's
first ``agent_message_chunk``, both timestamped by an observer on the client's connection (the
harness's arrival observation, with a clock). Each session plays one unmeasured warm-up turn (it
waits for the model SDK's import and asks for the title) and then ``--turns`` measured ones, each
the turn after a review started. The two configurations alternate for ``--rounds`` rounds, so a busy
spell on the machine hits both. The script also reports how many review streams were open between
each measured prompt and its first chunk and how many reviews reached the model (one per turn is
expected).

Target: the median with reviews at most 5 ms above the median without (p95 is reported too), with a
review streaming beside every measured turn and every nudged review reaching the model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from acp_hermes.core.review import MEMORY_REVIEW  # noqa: E402
from acp_hermes.testing.scripted_model import MessageReply, ModelRequest, Reply, TextBlock  # noqa: E402
from tests.support import acp_harness  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of  # noqa: E402

TURNS = 20
ROUNDS = 3
REVIEW_SECONDS = 0.25
TURN_CHUNKS = 24
TURN_EVENT_MS = 15.0
BACK_TO_BACK_REVIEW_SECONDS = 1.0
TARGET_P50_MS = 5.0
REVIEW_REPLY = "Nothing to save."
STREAM_EVENTS = 6  # message_start, ping, content_block_start, content_block_stop, message_delta, message_stop
EVENTS_BEFORE_FIRST_DELTA = 3  # message_start, ping, content_block_start


@dataclass(frozen=True)
class Pacing:
    review_seconds: float
    turn_chunks: int
    turn_event_delay: float  # seconds between the events of a turn's stream


class TimedArrivals(acp_harness.Arrivals):
    """The harness's arrival observation, with a timestamp of every message either way."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[float, str, dict[str, Any]]] = []  # (perf_counter, direction, message)

    def observe(self, event: Any) -> None:
        self.log.append((time.perf_counter(), str(event.direction.value), event.message))
        super().observe(event)


@dataclass
class Model:
    """Answers every conversation request: reviews slowly, turns as paced; notes when reviews began."""

    pacing: Pacing
    turn_number: int = 0
    reviews: list[float] = field(default_factory=list)  # perf_counter at each review request
    lock: threading.Lock = field(default_factory=threading.Lock)

    def conversation(self, request: ModelRequest) -> Reply:
        messages = request.body.get("messages") or []
        if messages and any(MEMORY_REVIEW in text for text in texts_of(messages[-1])):
            with self.lock:
                self.reviews.append(time.perf_counter())
            chunks = len(REVIEW_REPLY)
            delay = self.pacing.review_seconds / (chunks + STREAM_EVENTS)
            return MessageReply([TextBlock(REVIEW_REPLY, chunks=chunks)], event_delay=delay)
        with self.lock:
            self.turn_number += 1
            number = self.turn_number
        text = f"Answer {number}: the parser handles that case; " + "nothing else needs to change. " * 4
        return MessageReply([TextBlock(text, chunks=self.pacing.turn_chunks)], event_delay=self.pacing.turn_event_delay)

    def auxiliary(self, request: ModelRequest) -> Reply:
        return text_reply("Review latency")

    def began_within(self, start: float, end: float) -> int:
        with self.lock:
            return sum(1 for moment in self.reviews if start < moment <= end)


@dataclass
class Run:
    reviews: bool
    latencies_ms: list[float]
    overlap: list[int]  # review streams open between each measured prompt and its first chunk
    review_requests: int
    nudges: int  # reviews the server should have started


async def session_run(*, reviews: bool, turns: int, pacing: Pacing) -> Run:
    from tests.support.acp_harness import running_agent, write_config

    model = Model(pacing)
    config = "memory_nudge_interval: 1\nskill_nudge_interval: 0\n" if reviews else "learning_loop: false\n"
    with tempfile.TemporaryDirectory(prefix="acp-hermes-review-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        write_config(root / "hermes-home", config)
        fake.script(*[model.conversation] * ((turns + 1) * 2 + 10))
        fake.script_auxiliary(*[model.auxiliary] * 5)
        async with running_agent(root, fake) as agent:
            arrivals = agent.arrivals
            assert isinstance(arrivals, TimedArrivals)
            session_id = await agent.new_session()
            latencies: list[float] = []
            overlap: list[int] = []
            for number in range(turns + 1):
                mark = len(arrivals.log)
                stop = await agent.prompt(session_id, f"Turn {number}: does the parser handle trailing commas?")
                if stop != "end_turn":
                    raise RuntimeError(f"turn {number} ended with {stop!r}")
                if number == 0:
                    await agent.wait_for_update(session_id, "session_info_update")
                    if reviews:  # the warm-up turn's review is the one the first measured turn runs beside
                        await _until(lambda: model.began_within(0, time.perf_counter()) >= 1)
                    continue
                sent, first = _span(arrivals.log[mark:], session_id)
                latencies.append((first - sent) * 1000)
                overlap.append(model.began_within(sent - pacing.review_seconds, first))
            # Let the last reviews start and end rather than cancel them at exit.
            await anyio.sleep(pacing.review_seconds + 0.5 if reviews else 0)
        return Run(reviews, latencies, overlap, len(model.reviews), turns + 1 if reviews else 0)


async def _until(condition: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.001)


def _span(log: Sequence[tuple[float, str, dict[str, Any]]], session_id: str) -> tuple[float, float]:
    """(prompt sent, first agent_message_chunk arrived) in one turn's slice of the arrival log."""
    sent = next(t for t, direction, message in log
                if direction == "outgoing" and message.get("method") == "session/prompt")
    first = next(t for t, direction, message in log
                 if direction == "incoming" and t >= sent and message.get("method") == "session/update"
                 and message["params"].get("sessionId") == session_id
                 and message["params"]["update"].get("sessionUpdate") == "agent_message_chunk")
    return sent, first


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def run(turns: int, rounds: int, pacing: Pacing) -> list[Run]:
    acp_harness.Arrivals = TimedArrivals  # type: ignore[misc]  # running_agent builds its observer from it
    out = []
    for _ in range(rounds):
        out.append(await session_run(reviews=False, turns=turns, pacing=pacing))
        out.append(await session_run(reviews=True, turns=turns, pacing=pacing))
    return out


def summarise(runs: Sequence[Run], pacing: Pacing) -> tuple[str, bool]:
    samples = {flag: [ms for r in runs if r.reviews == flag for ms in r.latencies_ms] for flag in (False, True)}
    scripted = EVENTS_BEFORE_FIRST_DELTA * pacing.turn_event_delay * 1000
    rows = [f"prompt sent → first agent_message_chunk (includes {scripted:.0f} ms the fake model waits "
            "before its first delta)", "",
            f"{'configuration':<28} {'turns':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}"]
    for flag, label in ((False, "learning_loop: false"), (True, "memory_nudge_interval: 1")):
        values = samples[flag]
        rows.append(f"{label:<28} {len(values):>5} {percentile(values, 0.5):>8.2f} {percentile(values, 0.95):>8.2f} "
                    f"{max(values):>8.2f}")
    p50 = percentile(samples[True], 0.5) - percentile(samples[False], 0.5)
    p95 = percentile(samples[True], 0.95) - percentile(samples[False], 0.95)
    rows.append(f"{'difference (reviews − none)':<28} {'':>5} {p50:>+8.2f} {p95:>+8.2f}")
    rows.append("")
    rows.append("medians per session (none, reviews, none, …): "
                + ", ".join(f"{statistics.median(r.latencies_ms):.2f}" for r in runs))
    overlap = [n for r in runs if r.reviews for n in r.overlap]
    reached = sum(r.review_requests for r in runs if r.reviews)
    nudged = sum(r.nudges for r in runs if r.reviews)
    rows.append(f"reviews that reached the model: {reached} of {nudged} nudged; review streams open between a "
                f"measured prompt and its first chunk: min {min(overlap)}, median {statistics.median(overlap):g}, "
                f"max {max(overlap)}")
    misses = []
    if p50 > TARGET_P50_MS:
        misses.append(f"p50 difference {p50:+.2f} ms > {TARGET_P50_MS:g} ms")
    if min(overlap) < 1:
        misses.append("a measured turn had no review streaming beside it")
    if reached < nudged:
        misses.append(f"{nudged - reached} nudged reviews never reached the model (see the server's log: "
                      "a review that starts while another of the session runs fails)")
    rows.append("")
    rows.append(f"p50 difference {p50:+.2f} ms (target ≤ {TARGET_P50_MS:g} ms): "
                + ("all targets met" if not misses else "MISSED: " + "; ".join(misses)))
    return "\n".join(rows), not misses


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--turns", type=int, default=TURNS, help=f"measured turns per session (default {TURNS})")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"sessions of each configuration, alternating (default {ROUNDS})")
    parser.add_argument("--review-seconds", type=float, default=None,
                        help=f"how long a review's model reply streams (default {REVIEW_SECONDS:g}; "
                             f"{BACK_TO_BACK_REVIEW_SECONDS:g} with --back-to-back)")
    parser.add_argument("--turn-chunks", type=int, default=TURN_CHUNKS,
                        help=f"deltas of a turn's reply (default {TURN_CHUNKS})")
    parser.add_argument("--turn-event-ms", type=float, default=TURN_EVENT_MS,
                        help=f"ms between the events of a turn's stream (default {TURN_EVENT_MS:g})")
    parser.add_argument("--back-to-back", action="store_true",
                        help="turns answered at once (no gaps), reviews streaming for 1 s: they pile up")
    args = parser.parse_args(argv)
    if args.back_to_back:
        pacing = Pacing(args.review_seconds or BACK_TO_BACK_REVIEW_SECONDS, args.turn_chunks, 0.0)
    else:
        review = args.review_seconds if args.review_seconds is not None else REVIEW_SECONDS
        pacing = Pacing(review, args.turn_chunks, args.turn_event_ms / 1000)
    runs: list[Run] = anyio.run(run, args.turns, args.rounds, pacing)
    table, ok = summarise(runs, pacing)
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
