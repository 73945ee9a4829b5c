"""Subagents (``delegate_task``) through the real stdio server: batch wall time, per-child overhead, cancel.

    .venv/bin/python bench/delegation.py                    # 20 batches, 10 cancels
    .venv/bin/python bench/delegation.py --runs 30 --cancels 20 --sandbox auto
    .venv/bin/python bench/delegation.py --server "/path/to/other/.venv/bin/python -m acp_hermes"

The real server (``python -m acp_hermes``, driven through tests/support/acp_harness.py as an editor
over stdin/stdout, every message schema-checked) against the scripted model in this process, in a
fresh ``HERMES_HOME`` with the learning loop off. The fake answers by who asks
(``tests.support.fake_anthropic.DelegationRouter``): the parent's replies in order, each child's by its
task. One clock for everything: ``time.monotonic_ns()`` in this process, where both the client end of
the pipe and the fake model run.

1. **Batch wall time.** Each run is one turn: the parent model calls ``delegate_task`` with three
   tasks; each child's one model reply takes ``--latency`` seconds (1 s: the fake holds the request,
   then streams a short answer); the parent then answers. The batch's wall time runs from the
   delegate call's ``tool_call`` arriving at the client to its final ``tool_call_update``
   (``completed``). The slowest child is one model reply, ``--latency``: three children run one after
   another would take 3 ×. Target: median ≤ 1.3 × the slowest child.
2. **Per-child overhead**, in the same runs: from the delegate call's ``tool_call`` arriving at the
   client to each child's first request arriving at the fake (the child's session made and stored,
   its system prompt built, its loop started, its first request built and sent). The client's stamp
   is taken before the harness parses and checks the line, the fake's as the responder is called
   (the request read whole), so nothing of the harness is counted. Every child of every run is a
   sample (3 a run); the first run is a warm-up (the first turn loads the tools) and not counted.
   Target: p50 ≤ 20 ms.
3. **Cancel.** The session in ``bypass`` mode; the parent delegates three tasks and each child runs
   a foreground ``sleep`` with ``terminal`` (a unique duration per run, by which its process is found
   in ``/proc``; a ``pidfd`` of each tells when it is gone). Once all three run, the client sends
   ``session/cancel`` on the parent. Measured: the prompt's ``cancelled`` answer, and the moment the
   last of the three processes has exited. The next run's prompt in the same session shows the
   history stayed valid (the fake refuses a ``tool_use`` without its ``tool_result``).
   Target: both ≤ 500 ms, every run.
"""

from __future__ import annotations

import argparse
import os
import select
import shlex
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from acp import text_block

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from stats import percentile  # noqa: E402  (bench/ is on sys.path: the script runs from it)

from acp_hermes.testing.scripted_model import ModelRequest, Reply  # noqa: E402
from tests.support import acp_harness  # noqa: E402
from tests.support.fake_anthropic import (  # noqa: E402
    DelegationRouter,
    FakeAnthropic,
    text_reply,
    tool_reply,
)
from tests.support.schema_check import WireValidator  # noqa: E402

RUNS = 20
CANCELS = 10
LATENCY = 1.0
TARGET_WALL_RATIO = 1.3
TARGET_OVERHEAD_P50_MS = 20.0
TARGET_CANCEL_MS = 500.0
WAIT_LIMIT = 30.0


class StampedWire(WireValidator):
    """The harness's wire check, with the arrival time of every message the agent sent, stamped
    before the message is checked."""

    def __init__(self, schema_path: Any = None) -> None:
        super().__init__(schema_path)
        self.stamps: list[int] = []  # time.monotonic_ns() of self.messages[i]

    def observe(self, event: Any) -> None:
        if str(event.direction.value) == "incoming":
            self.stamps.append(time.monotonic_ns())
        super().observe(event)


class FirstRequests:
    """When each child's first request arrived at the fake, by its task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.arrived: dict[str, int] = {}

    def stamped(self, goal: str, reply: Callable[[ModelRequest], Reply] | Reply) -> Callable[[ModelRequest], Reply]:
        def answer(request: ModelRequest) -> Reply:
            now = time.monotonic_ns()
            with self._lock:
                self.arrived.setdefault(goal, now)
            return reply(request) if callable(reply) else reply

        return answer


def after(seconds: float, reply: Reply) -> Callable[[ModelRequest], Reply]:
    """A model that takes ``seconds`` before it answers (the fake's handler thread waits)."""

    def answer(request: ModelRequest) -> Reply:
        time.sleep(seconds)
        return reply

    return answer


def stamp_of(agent: acp_harness.AgentProcess, condition: Callable[[dict[str, Any]], bool]) -> int | None:
    wire = agent.wire
    assert isinstance(wire, StampedWire)
    for stamp, message in zip(wire.stamps, wire.messages, strict=False):
        if condition(message):
            return stamp
    return None


def call_update(call_id: str, *, final: bool) -> Callable[[dict[str, Any]], bool]:
    def matches(message: dict[str, Any]) -> bool:
        if message.get("method") != "session/update":
            return False
        update = message["params"]["update"]
        if update.get("toolCallId") != call_id:
            return False
        if final:
            return update["sessionUpdate"] == "tool_call_update" and update.get("status") in ("completed", "failed")
        return bool(update["sessionUpdate"] == "tool_call")

    return matches


# -- 1 and 2: batches


async def batches(runs: int, latency: float, server: Sequence[str]) -> tuple[list[float], list[list[float]]]:
    """Wall times of the batches (s) and each run's children's overheads in the order their requests
    arrived (ms), the warm-up run left out."""
    acp_harness.WireValidator = StampedWire  # type: ignore[misc]  # running_agent builds its check from it
    walls: list[float] = []
    overheads: list[list[float]] = []
    with tempfile.TemporaryDirectory(prefix="acp-hermes-delegation-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", "learning_loop: false\n")
        fake.script_auxiliary(text_reply("Delegated work"))
        async with acp_harness.running_agent(root, fake, command=tuple(server)) as agent:
            session_id = await agent.new_session()
            for number in range(runs + 1):
                goals = [f"Task {child} of run {number}: summarise module {child}" for child in (1, 2, 3)]
                call_id = f"toolu_batch_{number:03d}"
                first = FirstRequests()
                router = DelegationRouter().parent(
                    tool_reply("delegate_task", {"tasks": [{"goal": goal} for goal in goals]}, id=call_id),
                    text_reply("All three summarised."),
                )
                for goal in goals:
                    router.child(goal, first.stamped(goal, after(latency, text_reply(f"Summary of {goal[:6]}."))))
                fake.script(*router.items())
                stop = await agent.prompt(session_id, f"Summarise three modules (run {number}).")
                if stop != "end_turn":
                    raise RuntimeError(f"run {number} ended with {stop!r}")
                started = stamp_of(agent, call_update(call_id, final=False))
                ended = stamp_of(agent, call_update(call_id, final=True))
                if started is None or ended is None or len(first.arrived) != 3:
                    raise RuntimeError(f"run {number}: the delegate call or a child was not seen")
                if number == 0:
                    continue  # the warm-up
                walls.append((ended - started) / 1e9)
                overheads.append(sorted((first.arrived[goal] - started) / 1e6 for goal in goals))
    return walls, overheads


# -- 3: cancel


def sleep_processes(marker: str) -> list[int]:
    """Pids of the processes running ``sleep <marker>``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and os.path.basename(argv[0]) == b"sleep" and argv[1] == marker.encode():
            found.append(int(entry))
    return found


async def three_running(marker: str) -> list[int]:
    """Wait (polling /proc, bounded) until the three children's commands run; their pids."""
    with anyio.fail_after(WAIT_LIMIT):
        while len(pids := sleep_processes(marker)) < 3:
            await anyio.sleep(0.005)
    return pids


def wait_gone(pidfds: list[int]) -> int:
    """Block until every process is gone (its pidfd readable); when the last went (monotonic ns)."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    left = set(pidfds)
    last = time.monotonic_ns()
    deadline = time.monotonic() + WAIT_LIMIT
    while left:
        timeout = max(0, int((deadline - time.monotonic()) * 1000))
        events = poller.poll(timeout)
        if not events:
            raise RuntimeError(f"{len(left)} command(s) still running {WAIT_LIMIT:g} s after the cancel")
        last = time.monotonic_ns()
        for fd, _ in events:
            poller.unregister(fd)
            left.discard(fd)
    return last


async def cancels(runs: int, sandbox: str, server: Sequence[str]) -> list[tuple[float, float]]:
    """(cancel → ``cancelled`` answer, cancel → the last command gone) in ms, per run."""
    with tempfile.TemporaryDirectory(prefix="acp-hermes-delegation-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", f"sandbox: {sandbox}\nlearning_loop: false\n")
        fake.script_auxiliary(text_reply("Cancelled work"))
        async with acp_harness.running_agent(root, fake, command=tuple(server)) as agent:
            session_id = await agent.new_session()
            await agent.conn.set_session_mode(session_id=session_id, mode_id="bypass")
            return [await one_cancel(agent, fake, session_id, number) for number in range(runs)]


async def one_cancel(agent: acp_harness.AgentProcess, fake: FakeAnthropic, session_id: str,
                     number: int) -> tuple[float, float]:
    marker = f"{900 + number}.{os.getpid() % 1000:03d}"  # a unique duration: its processes, found
    goals = [f"Task {child} of cancel {number}: run the slow check" for child in (1, 2, 3)]
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"tasks": [{"goal": goal, "toolsets": ["terminal"]} for goal in goals]}),
    )
    for goal in goals:
        router.child(goal, tool_reply("terminal", {"command": f"sleep {marker}"}))
    fake.script(*router.items())
    answered: list[int] = []

    async def prompt() -> None:
        text = f"Run the slow checks (cancel {number})."
        response = await agent.conn.prompt(session_id=session_id, prompt=[text_block(text)])
        answered.append(time.monotonic_ns())
        if response.stop_reason != "cancelled":
            raise RuntimeError(f"cancel {number}: the prompt answered {response.stop_reason!r}")

    async with anyio.create_task_group() as group:
        group.start_soon(prompt)
        pids = await three_running(marker)
        pidfds = [os.pidfd_open(pid) for pid in pids]
        try:
            cancelled = time.monotonic_ns()
            await agent.conn.cancel(session_id=session_id)
            gone = await anyio.to_thread.run_sync(wait_gone, pidfds)
        finally:
            for fd in pidfds:
                os.close(fd)
            for pid in sleep_processes(marker):  # a cancel that missed them: they must not outlive the bench
                os.kill(pid, signal.SIGKILL)
    return (answered[0] - cancelled) / 1e6, (gone - cancelled) / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--runs", type=int, default=RUNS, help=f"measured batches of three (default {RUNS})")
    parser.add_argument("--cancels", type=int, default=CANCELS, help=f"cancelled batches (default {CANCELS})")
    parser.add_argument("--latency", type=float, default=LATENCY,
                        help=f"each child's model reply (s, default {LATENCY:g})")
    parser.add_argument("--sandbox", choices=("off", "auto"), default="off",
                        help="run the children's commands in the OS sandbox (default off)")
    parser.add_argument("--server", default=f"{sys.executable} -m acp_hermes", help="the agent command to measure")
    args = parser.parse_args(argv)
    server = shlex.split(args.server)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"delegate_task, three children a batch (load {load})")

    walls, by_run = anyio.run(batches, args.runs, args.latency, server)
    overheads = [value for run in by_run for value in run]
    ratio = statistics.median(walls) / args.latency
    print(f"1. batch wall time, {len(walls)} batches, each child's reply {args.latency:g} s:")
    print(f"   median {statistics.median(walls) * 1000:.0f} ms  [{min(walls) * 1000:.0f}–{max(walls) * 1000:.0f}]"
          f"  = {ratio:.3f} × the slowest child (one after another: 3 ×)")
    print(f"2. per-child overhead (delegate tool_call → the child's first model request), {len(overheads)} children:")
    print(f"   p50 {percentile(overheads, 0.5):.1f} ms  p90 {percentile(overheads, 0.9):.1f} ms  "
          f"max {max(overheads):.1f} ms  mean {statistics.fmean(overheads):.1f} ms")
    print("   first, second, third request of a batch, p50: "
          + ", ".join(f"{statistics.median(run[i] for run in by_run):.1f}" for i in range(3)) + " ms")

    timings = anyio.run(cancels, args.cancels, args.sandbox, server)
    answers, gones = [t[0] for t in timings], [t[1] for t in timings]
    both = [max(answer, gone) for answer, gone in timings]
    print(f"3. cancel of the parent with three children in a foreground `sleep`, {len(timings)} runs, "
          f"sandbox {args.sandbox}:")
    print(f"   → `cancelled` answered: median {statistics.median(answers):.0f} ms, max {max(answers):.0f} ms")
    print(f"   → the last command gone: median {statistics.median(gones):.0f} ms, max {max(gones):.0f} ms")
    print(f"   → both: median {statistics.median(both):.0f} ms, max {max(both):.0f} ms")

    overhead_p50 = percentile(overheads, 0.5)
    checks = [
        (f"batch ≤ {TARGET_WALL_RATIO:g} × the slowest child", ratio <= TARGET_WALL_RATIO),
        (f"per-child overhead p50 ≤ {TARGET_OVERHEAD_P50_MS:g} ms", overhead_p50 <= TARGET_OVERHEAD_P50_MS),
        (f"cancel ≤ {TARGET_CANCEL_MS:g} ms (every run)", max(both) <= TARGET_CANCEL_MS),
    ]
    for name, ok in checks:
        print(f"target {name}: {'met' if ok else 'MISSED'}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
