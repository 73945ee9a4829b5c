"""What a steer adds to the turn it reaches, and twenty prompts queued at once, through the real stdio server.

    .venv/bin/python bench/steering.py                 # 30 paired turns, 20 queued prompts
    .venv/bin/python bench/steering.py --runs 60 --queued 50
    .venv/bin/python bench/steering.py --server "/path/to/other/.venv/bin/python -m acp_hermes"

The real server (``python -m acp_hermes``, driven through tests/support/acp_harness.py as an editor over
stdin/stdout) against the scripted model, in a fresh ``HERMES_HOME`` with the learning loop off.

**Steer.** Each turn: the model writes a file; the write waits for the editor's permission. While it
waits, every other turn sends ``_session/steering``; then the permission is given. Measured: from the
permission's answer to the fake model receiving the turn's next request (same process, same clock) —
the write, its result stored, the delivery of the steer (its row stored, the ``user_message_chunk``
sent), the request built and sent. The editor's own handling of the extra update is left out.
Turns with and without a steer alternate, so load drifts hit both; the figure is the difference of
their medians and of their 90th percentiles. Each steered turn's second request is checked to carry the
words after the tool result, with no request added. The in-process cost of a delivery (``Transcript.
add_steer`` on a real SessionDB: the history merge and the row's write, shielded, on a worker thread)
is timed on its own as well.

**Queue.** Twenty (``--queued``) ``session/prompt`` requests sent at once to one session: each must be
answered ``end_turn``, in the order sent, the model seeing every prompt once, in order.

Targets: a steer adds ≤ 2 ms to its turn and needs no extra request; every queued prompt answered in
order, nothing lost.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from stats import percentile  # noqa: E402  (bench/ is on sys.path: the script runs from it)

from acp_hermes.core.steering import STEER_NOTE, Steer  # noqa: E402
from acp_hermes.core.transcript import Transcript  # noqa: E402
from acp_hermes.core.user_prompt import TextPart  # noqa: E402
from acp_hermes.testing.scripted_model import MessageReply  # noqa: E402
from acp_hermes_memory.session_db import SessionDB  # noqa: E402
from tests.support import acp_harness  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of, tool_reply  # noqa: E402

RUNS = 30
QUEUED = 20
TARGET_MS = 2.0
STEER_TEXT = "Use the other table"


class PacedPermissions(acp_harness.EditorClient):
    """An editor whose user answers each permission question when the benchmark says so."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()
        self.go = anyio.Event()
        self.answered_at = 0.0

    def next_turn(self) -> None:
        self.asked, self.go = anyio.Event(), anyio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.asked.set()
        await self.go.wait()
        self.answered_at = time.perf_counter()
        return await super().request_permission(options, session_id, tool_call, **kwargs)


def stamped(reply: MessageReply, stamps: list[float]) -> Any:
    """``reply``, noting when the fake model received the request it answers."""

    def answer(request: Any) -> MessageReply:
        stamps.append(time.perf_counter())
        return reply

    return answer


async def checked_prompt(agent: acp_harness.AgentProcess, session_id: str, text: str) -> None:
    """Run a prompt, which must end its turn normally."""
    stop = await agent.prompt(session_id, text)
    if stop != "end_turn":
        raise RuntimeError(f"{text!r} ended with {stop!r}")


async def steered_turns(runs: int, server: Sequence[str]) -> tuple[list[float], list[float]]:
    """Milliseconds from the permission's answer to the next model request, without and with a steer."""
    plain: list[float] = []
    steered: list[float] = []
    client = PacedPermissions()
    with tempfile.TemporaryDirectory(prefix="acp-hermes-steer-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", "learning_loop: false\n")
        fake.script_auxiliary(text_reply("Steering"))
        async with acp_harness.running_agent(root, fake, client=client, command=tuple(server)) as agent:
            session_id = await agent.new_session()
            for number in range(2 * runs + 2):  # the first pair warms up the tools and is not counted
                steer = number % 2 == 1
                client.next_turn()
                asked_again: list[float] = []
                fake.script(tool_reply("write_file", {"path": f"f{number}.txt", "content": "x\n"}),
                            stamped(text_reply("Done."), asked_again))
                requests_before = len(fake.stream_requests)
                async with anyio.create_task_group() as group:
                    group.start_soon(checked_prompt, agent, session_id, f"write file {number}")
                    with anyio.fail_after(20):
                        await client.asked.wait()
                    if steer:
                        answer = await agent.conn.ext_method("session/steering", {
                            "sessionId": session_id, "prompt": [{"type": "text", "text": STEER_TEXT}]})
                        if answer != {"outcome": "injected"}:
                            raise RuntimeError(f"steer answered {answer}")
                    client.go.set()
                requests = fake.stream_requests[requests_before:]
                if len(requests) != 2:
                    raise RuntimeError(f"turn {number} made {len(requests)} model requests, not 2")
                carried = texts_of(requests[1]["messages"][-1]["content"])
                if steer and carried[-2:] != [STEER_NOTE, STEER_TEXT]:
                    raise RuntimeError(f"the steer did not reach the next request: {carried}")
                if number >= 2:
                    (steered if steer else plain).append((asked_again[0] - client.answered_at) * 1000)
    return plain, steered


async def delivery_cost(runs: int) -> list[float]:
    """Milliseconds ``Transcript.add_steer`` takes on a real SessionDB, after a tool result."""
    timings: list[float] = []
    with tempfile.TemporaryDirectory(prefix="acp-hermes-steer-db-") as scratch:
        db = SessionDB(Path(scratch) / "state.db")
        db.create_session("s", cwd=scratch, model="m", mode="default", model_config={}, system_prompt="sys")
        transcript = Transcript("s", db, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
        steer = Steer(({"type": "text", "text": STEER_NOTE}, {"type": "text", "text": STEER_TEXT}), STEER_TEXT,
                      (TextPart(STEER_TEXT),))
        for _ in range(runs):
            transcript.messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "x", "input": {}}]})
            transcript.messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]})
            began = time.perf_counter()
            await transcript.add_steer(steer)
            timings.append((time.perf_counter() - began) * 1000)
        db.close()
    return timings


async def queued_prompts(count: int, server: Sequence[str]) -> float:
    """Seconds for ``count`` prompts sent at once to be answered; raises unless all are, in order."""
    with tempfile.TemporaryDirectory(prefix="acp-hermes-queue-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", "learning_loop: false\n")
        fake.script(*(text_reply(f"answer {n}") for n in range(count)))
        fake.script_auxiliary(text_reply("Queue"))
        async with acp_harness.running_agent(root, fake, command=tuple(server)) as agent:
            session_id = await agent.new_session()
            began = time.perf_counter()
            async with anyio.create_task_group() as group:
                prompts = acp_harness.Prompts(agent, group)
                for n in range(count):
                    await prompts.start(f"p{n}", session_id, f"prompt {n}")
            elapsed = time.perf_counter() - began
        if prompts.finished != [f"p{n}" for n in range(count)] or set(prompts.results.values()) != {"end_turn"}:
            raise RuntimeError(f"answered out of order or not all end_turn: {prompts.finished} {prompts.results}")
        seen = [texts_of(request["messages"][-1]["content"]) for request in fake.stream_requests]
        if seen != [[f"prompt {n}"] for n in range(count)]:
            raise RuntimeError(f"the model did not see every prompt once, in order: {seen}")
    return elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--runs", type=int, default=RUNS, help=f"measured turns of each kind (default {RUNS})")
    parser.add_argument("--queued", type=int, default=QUEUED, help=f"prompts sent at once (default {QUEUED})")
    parser.add_argument("--server", default=f"{sys.executable} -m acp_hermes", help="the agent command to measure")
    args = parser.parse_args(argv)
    server = shlex.split(args.server)
    plain, steered = anyio.run(steered_turns, args.runs, server)
    delivery = anyio.run(delivery_cost, 500)
    elapsed = anyio.run(queued_prompts, args.queued, server)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    added_p50 = statistics.median(steered) - statistics.median(plain)
    added_p90 = percentile(steered, 0.9) - percentile(plain, 0.9)
    print(f"steer while a tool runs, {len(plain)} + {len(steered)} paired turns (load {load})")
    print(f"  permission answered → next model request: without p50 {statistics.median(plain):.2f} ms, "
          f"with p50 {statistics.median(steered):.2f} ms → added p50 {added_p50:+.2f} ms, p90 {added_p90:+.2f} ms")
    print(f"  delivery in process (add_steer, real SessionDB): p50 {percentile(delivery, 0.5):.3f} ms, "
          f"p99 {percentile(delivery, 0.99):.3f} ms; model requests per steered turn: 2 (as without)")
    print(f"queue: {args.queued} prompts sent at once, all answered end_turn in order in {elapsed:.2f} s "
          f"({elapsed / args.queued * 1000:.1f} ms a prompt)")
    ok = added_p50 <= TARGET_MS and percentile(delivery, 0.99) <= TARGET_MS
    print(f"target: a steer adds ≤ {TARGET_MS:g} ms: {'met' if ok else 'MISSED'}; queue in order: met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
