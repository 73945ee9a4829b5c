"""Steering and queueing through the real stdio server: what a steer adds to a turn, and 20 prompts sent at once.

    .venv/bin/python bench/steering.py                      # 200 measured turns, 5 rounds of 20 prompts
    .venv/bin/python bench/steering.py --runs 600 --rounds 10 --samples 5000
    .venv/bin/python bench/steering.py --server "/path/to/other/.venv/bin/python -m acp_hermes"

The real server (``python -m acp_hermes``, driven through tests/support/acp_harness.py as an editor
over stdin/stdout) against the scripted model in this process, in a fresh ``HERMES_HOME`` with the
learning loop and checkpoints off (neither is what is measured, both add noise) and the server's
log at INFO (the harness's DEBUG log writes a line per event). Every message the agent sends is
schema-checked, as in the integration tests, but after the run: checked as it arrives, the client's
work on the one extra ``user_message_chunk`` of a steered turn would count against the server. One
clock: ``time.perf_counter_ns()`` in this process, where the client end of the pipe and the fake
model both run; the client's stamps are taken as a message is read off the pipe (before the SDK
handles it) and after a message it sent is written.

1. **A steer sent while a tool runs** (target: it reaches the model in the very next request, no
   extra request, and adds ≤ 2 ms to that turn). Each turn: the model calls ``write_file``; the edit
   asks permission (``default`` mode) and the client holds the question. In a steered turn the client
   then sends ``_session/steering`` and waits for ``{"outcome": "injected"}``; in both kinds it waits
   ``--hold`` ms more (the server idle again) and allows the edit; the model then answers with text.
   Checked every turn: two model requests, both kinds; the second request's last message ends with
   the call's ``tool_result`` followed by exactly the steer's blocks (``STEER_NOTE``, the steer's
   text) when steered, nothing after it when not. Measured: the turn's wall time without the time
   the tool was held (prompt sent → question arrived, plus the answer written → the prompt's
   response arrived); and of its second part, release → the fake receiving the model's next request
   (the write, its result stored, the steer delivered: its row stored and its ``user_message_chunk``
   sent, the request built and sent: the span the steer's cost falls in, and the steadiest figure)
   and release → answer. Steered and plain turns alternate A B B A in sessions of 20 (a fresh
   session each time, its first turn a warm-up that also draws the title request, not counted), so
   the history's growth and a busy spell hit both. The added time is the difference of the
   quantiles of the two kinds, with the median of the differences of neighbouring turns (a steered
   and a plain one of the same session) beside it; for the whole turn both medians must be ≤ 2 ms.
   The p90/p99 differences are printed but not judged: with 100 turns a kind a p99 is one or two
   turns, which on a shared machine land on either kind (``--runs 600`` steadies them); the
   in-process figure (2.) is the one that bounds every steer. This process's cyclic GC is off while
   the server is timed (``client_gc_off``).
2. **The same cost in-process**, without the pipes: ``AgentLoop._deliver_steers`` with one steer
   waiting, as the loop runs it right before a model request: ``Steering.take``, ``Transcript.add_steer``
   (the blocks appended to the tool_result message, the row written to a real ``SessionDB`` on a
   worker thread) and the ``user_message_chunk`` rendered by the adapter's ``SessionUpdates`` and
   encoded as the server encodes it. ``add_steer`` alone beside it. Target: delivery p99 ≤ 2 ms.
   This is this checkout's code, whatever ``--server`` names.
3. **Queued prompts** (target: 20 prompts sent at once to one session all answered ``end_turn``, in
   order, nothing lost). A fresh session; 20 ``session/prompt`` requests are written back to back
   without waiting for any answer (the first model reply is held until the twentieth is on the wire,
   so all 20 queue). Checked: the answers come in send order, every one ``end_turn``; the model got
   20 requests, request n's last message is prompt n and its history holds every earlier exchange
   once (2n + 1 messages); the streamed text is the 20 answers in order. Measured: first prompt sent →
   last answer, per prompt; and per turn, the server's time from the model's reply to the next
   turn's model request. The same 20 prompts sent one after another (each after the previous answer)
   in another fresh session are the baseline; queued and one-by-one rounds alternate A B B A, after
   10 warm-up prompts (a process's first turns are slower).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from acp.connection import StreamDirection, StreamEvent
from pydantic_core import to_json

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from stats import percentile  # noqa: E402  (bench/ is on sys.path: the script runs from it)

from acp_hermes.adapter.client import ClientLink, SessionUpdates  # noqa: E402
from acp_hermes.core.loop import AgentLoop, TurnControls  # noqa: E402
from acp_hermes.core.steering import Steer, Steering  # noqa: E402
from acp_hermes.core.transcript import Transcript  # noqa: E402
from acp_hermes.core.turn_input import STEER_NOTE, steer_blocks  # noqa: E402
from acp_hermes.core.user_prompt import TextPart  # noqa: E402
from acp_hermes.model.messages import Message, Text, ToolResult, ToolUse  # noqa: E402
from acp_hermes.testing.scripted_model import ModelRequest, Reply  # noqa: E402
from acp_hermes_memory.session_db import SessionDB  # noqa: E402
from acp_hermes_tools.registry import ToolRegistry  # noqa: E402
from tests.support import acp_harness  # noqa: E402
from tests.support.acp_harness import AgentProcess, EditorClient, Prompts, PromptTask  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of, tool_reply  # noqa: E402
from tests.support.fake_provider import FakeProvider  # noqa: E402
from tests.support.schema_check import WireValidator  # noqa: E402
from tests.support.tools import make_scope  # noqa: E402

RUNS = 200  # measured turns, half of them steered
SESSION_TURNS = 20  # measured turns per session (each session also has a warm-up turn)
HOLD_MS = 5.0
IN_PROCESS = 2000
ROUNDS = 5
QUEUED = 20
WARM_UP = 10  # prompts before the first round (the first turns of a process are slower)
TARGET_ADDED_MS = 2.0
WAIT = 30.0
CONFIG = "learning_loop: false\ncheckpoints:\n  enabled: false\n"


def ms(ns: float) -> float:
    return ns / 1e6


@contextlib.contextmanager
def client_gc_off() -> Iterator[None]:
    """No cyclic garbage collection in this process (the client and the fake model) while the server is
    timed: the messages and request bodies kept for the checks grow, and a full collection over them
    (80–120 ms, at the same turns every run) would be counted against the server."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# -- the client side


class StampedWire(WireValidator):
    """The harness's wire check, done after the run; meanwhile every message is only stamped and kept
    (the agent's as it is read off the pipe, the client's once it is written)."""

    def __init__(self, schema_path: Any = None) -> None:
        super().__init__(schema_path)
        self.log: list[tuple[int, StreamEvent]] = []

    def observe(self, event: StreamEvent) -> None:
        stamp = time.perf_counter_ns()
        self.log.append((stamp, event))
        if event.direction == StreamDirection.INCOMING:
            self.messages.append(event.message)  # AgentProcess.updates() reads these as they come

    def assert_clean(self) -> None:
        self.messages = []
        for _, event in self.log:
            super().observe(event)
        super().assert_clean()

    def find(self, direction: StreamDirection, condition: Callable[[dict[str, Any]], bool]) -> tuple[int, Any]:
        """(when, message) of the last message going ``direction`` that meets ``condition``."""
        for stamp, event in reversed(self.log):
            if event.direction == direction and condition(event.message):
                return stamp, event.message
        raise RuntimeError("a message the benchmark waits for was never seen")

    def sent(self, method: str, condition: Callable[[dict[str, Any]], bool]) -> tuple[int, Any]:
        """(when, id) of the last request ``method`` the client wrote that meets ``condition``."""
        stamp, message = self.find(StreamDirection.OUTGOING, lambda m: m.get("method") == method and condition(m))
        return stamp, message["id"]

    def answered(self, request_id: Any) -> int:
        """When the agent's response to the client's request ``request_id`` arrived."""
        return self.find(StreamDirection.INCOMING, lambda m: "method" not in m and m.get("id") == request_id)[0]


def wire_of(agent: AgentProcess) -> StampedWire:
    assert isinstance(agent.wire, StampedWire)
    return agent.wire


class HeldEditor(EditorClient):
    """An editor whose user answers each permission question when the benchmark says so."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()
        self.go = anyio.Event()

    def next_turn(self) -> None:
        self.asked, self.go = anyio.Event(), anyio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.asked.set()
        await self.go.wait()
        return await super().request_permission(options, session_id, tool_call, **kwargs)


def prompt_text(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["params"]["prompt"])


# -- 1: a steer sent while a tool runs


@dataclass
class Turn:
    steered: bool
    session: int
    active_ms: float  # wall time without the hold
    after_ms: float  # release -> answer
    next_request_ms: float  # release -> the model's next request


async def steer_turns(runs: int, hold: float, server: Sequence[str]) -> list[Turn]:
    acp_harness.WireValidator = StampedWire  # type: ignore[misc]  # running_agent builds its check from it
    client = HeldEditor()
    turns: list[Turn] = []
    with tempfile.TemporaryDirectory(prefix="acp-hermes-steering-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", CONFIG)
        async with acp_harness.running_agent(root, fake, client=client, command=tuple(server),
                                             env={"ACP_HERMES_LOG_LEVEL": "INFO"}) as agent:
            number = 0
            session = 0
            while len(turns) < runs:
                session_id = await agent.new_session()
                fake.script_auxiliary(text_reply(f"Session {session}"))
                titles = len(fake.auxiliary_requests)
                await one_turn(agent, fake, client, session_id, number, steered=False, hold=hold)  # warm-up
                number += 1
                with anyio.move_on_after(5):  # let the title request come and go before measuring
                    while len(fake.auxiliary_requests) <= titles:
                        await anyio.sleep(0.005)
                await anyio.sleep(0.05)
                for index in range(min(SESSION_TURNS, runs - len(turns))):
                    steered = index % 4 in (1, 2)  # A B B A
                    figures = await one_turn(agent, fake, client, session_id, number, steered=steered, hold=hold)
                    turns.append(Turn(steered, session, *figures))
                    number += 1
                session += 1
    return turns


async def one_turn(agent: AgentProcess, fake: FakeAnthropic, client: HeldEditor, session_id: str, number: int,
                   *, steered: bool, hold: float) -> tuple[float, float, float]:
    """One write_file turn, steered or not, checked; in ms: its wall time without the hold, release →
    answer, release → the model's next request."""
    call_id = f"toolu_steer_{number:04d}"
    words = f"Steer {number}: name it b{number}.txt instead"
    asked_again: list[int] = []

    def second(request: ModelRequest) -> Reply:
        asked_again.append(time.perf_counter_ns())
        return text_reply(f"Done {number}.")

    fake.script(tool_reply("write_file", {"path": f"out-{number}.txt", "content": f"{number}\n"}, id=call_id),
                second)
    before = len(fake.stream_requests)
    client.next_turn()
    task = PromptTask(agent, session_id)
    text = f"Write out-{number}.txt"
    async with anyio.create_task_group() as group:
        group.start_soon(task.run, text)
        with anyio.fail_after(WAIT):
            await client.asked.wait()
        if steered:
            answer = await agent.conn.ext_method("session/steering", {
                "sessionId": session_id, "prompt": [{"type": "text", "text": words}]})
            if answer != {"outcome": "injected"}:
                raise RuntimeError(f"turn {number}: the steer was answered {answer!r}")
        await anyio.sleep(hold / 1000)
        client.go.set()
    if task.stop_reason != "end_turn":
        raise RuntimeError(f"turn {number} ended with {task.stop_reason!r}")
    requests = fake.stream_requests[before:]
    if len(requests) != 2:
        raise RuntimeError(f"turn {number} ({'steered' if steered else 'plain'}) made {len(requests)} model "
                           "requests, not 2")
    last = requests[1]["messages"][-1]
    kinds = [b.get("type") for b in last["content"]]
    result_at = max((n for n, kind in enumerate(kinds) if kind == "tool_result"), default=-1)
    if last["role"] != "user" or result_at < 0 or last["content"][result_at].get("tool_use_id") != call_id:
        raise RuntimeError(f"turn {number}: the second request does not end with the call's result")
    after_result = texts_of(last["content"][result_at + 1:])
    if after_result != ([STEER_NOTE, words] if steered else []):
        raise RuntimeError(f"turn {number}: after the tool_result the next request carries {after_result!r}")

    wire = wire_of(agent)
    sent, prompt_id = wire.sent("session/prompt", lambda m: prompt_text(m) == text)
    asked, question = wire.find(StreamDirection.INCOMING, lambda m: m.get("method") == "session/request_permission"
                                and m["params"]["toolCall"]["toolCallId"] == call_id)
    released, _ = wire.find(StreamDirection.OUTGOING, lambda m: "method" not in m and m.get("id") == question["id"])
    answered = wire.answered(prompt_id)
    return ms(asked - sent + answered - released), ms(answered - released), ms(asked_again[0] - released)


# -- 2: the same delivery in-process


class NullEngine:
    """Where the in-process ``session/update``s go: encoded as the server's transport encodes them, then dropped."""

    def __init__(self) -> None:
        self._sink = open(os.devnull, "wb")  # noqa: SIM115  (closed by close())

    async def send_notification(self, method: str, params: Any) -> None:
        self._sink.write(to_json({"jsonrpc": "2.0", "method": method, "params": params}) + b"\n")

    def close(self) -> None:
        self._sink.close()


async def in_process(samples: int, directory: str | None) -> tuple[list[float], list[float]]:
    """(delivery, add_steer alone) in ms per sample."""
    session_id = "bench-steering"
    with tempfile.TemporaryDirectory(prefix="acp-hermes-steering-", dir=directory) as scratch:
        root = Path(scratch)
        db = SessionDB(root / "state.db")
        engine = NullEngine()
        try:
            db.create_session(session_id, cwd=str(root), model="claude-bench", mode="default", model_config={},
                              system_prompt="You are a benchmark.")
            transcript = Transcript(session_id, db)
            steering = Steering()
            steering.open()
            scope = make_scope(root, session_id=session_id)
            loop = AgentLoop(provider=FakeProvider(), registry=ToolRegistry([]),
                             sink=SessionUpdates(ClientLink(engine), session_id),  # type: ignore[arg-type]
                             transcript=transcript, system_prompt="You are a benchmark.",
                             make_context=lambda call_id, title, sink: None,  # type: ignore[arg-type,return-value]
                             scope=scope, controls=TurnControls(steering=steering))
            await transcript.add_user([Text("go")], "go", [TextPart("go")])
            delivery: list[float] = []
            alone: list[float] = []
            warm_up = samples // 10  # the first fifth of all (a tenth of each kind) is not counted
            for number in range(2 * (samples + warm_up)):  # delivery and add_steer alone, alternating
                words = f"Steer {number}: name it b{number}.txt instead"
                steer = Steer((Text(words),), words, (TextPart(words),))
                transcript.messages[1:] = [
                    Message("assistant", (ToolUse(f"toolu_{number}", "write_file", {}),)),
                    Message("user", (ToolResult(f"toolu_{number}", "Wrote 3 bytes."),))]
                if number % 2:
                    steering.offer(steer)
                    started = time.perf_counter_ns()
                    await loop._deliver_steers()
                    spent = time.perf_counter_ns() - started
                    target = delivery
                else:
                    started = time.perf_counter_ns()
                    await transcript.add_steer(steer, steer_blocks(steer))
                    spent = time.perf_counter_ns() - started
                    target = alone
                if transcript.messages[-1].text() != STEER_NOTE + words or len(transcript.messages) != 3:
                    raise RuntimeError("the steer did not join the tool_result message")
                if number >= 2 * warm_up:
                    target.append(ms(spent))
        finally:
            engine.close()
            db.close()
    return delivery, alone


# -- 3: queued prompts


@dataclass
class Round:
    queued: bool
    total_ms: float
    cycles_ms: list[float] = field(default_factory=list)  # model's reply -> the next turn's request


class Stamped:
    """The fake's replies for one round: each request's arrival and its reply's release, stamped."""

    def __init__(self, count: int, held: threading.Event | None) -> None:
        self.arrived: list[int] = []
        self.released: list[int] = []
        self._held = held
        self._count = count

    def replies(self) -> list[Callable[[ModelRequest], Reply]]:
        return [self._reply(n) for n in range(self._count)]

    def _reply(self, number: int) -> Callable[[ModelRequest], Reply]:
        def answer(request: ModelRequest) -> Reply:
            self.arrived.append(time.perf_counter_ns())
            if number == 0 and self._held is not None and not self._held.wait(WAIT):
                raise RuntimeError("the prompts were not all sent")
            self.released.append(time.perf_counter_ns())
            return text_reply(f"answer {number}. ")

        return answer


async def queue_rounds(rounds: int, server: Sequence[str]) -> list[Round]:
    acp_harness.WireValidator = StampedWire  # type: ignore[misc]
    out: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="acp-hermes-queue-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        acp_harness.write_config(root / "hermes-home", CONFIG)
        async with acp_harness.running_agent(root, fake, command=tuple(server),
                                             env={"ACP_HERMES_LOG_LEVEL": "INFO"}) as agent:
            warm = await agent.new_session()  # the first turns of the process load the loop and the tools
            fake.script(*(text_reply("warm") for _ in range(WARM_UP)))
            fake.script_auxiliary(text_reply("Warm-up"))
            for _ in range(WARM_UP):
                if await agent.prompt(warm, "warm up") != "end_turn":
                    raise RuntimeError("a warm-up prompt failed")
            for number in range(2 * rounds):
                out.append(await one_round(agent, fake, number, queued=number % 4 in (0, 3)))
    return out


async def one_round(agent: AgentProcess, fake: FakeAnthropic, number: int, *, queued: bool) -> Round:
    session_id = await agent.new_session()
    held = threading.Event() if queued else None
    stamps = Stamped(QUEUED, held)
    fake.script(*stamps.replies())
    fake.script_auxiliary(text_reply(f"Round {number}"))
    before = len(fake.stream_requests)
    names = [f"r{number}p{n}" for n in range(QUEUED)]
    texts = [f"round {number}, prompt {n}" for n in range(QUEUED)]
    async with anyio.create_task_group() as group:
        prompts = Prompts(agent, group)
        for name, text in zip(names, texts, strict=True):
            await prompts.start(name, session_id, text)  # returns once it is on the wire
            if not queued:
                with anyio.fail_after(WAIT):
                    await prompts.done[name].wait()
        if held is not None:
            held.set()
    kind = "queued" if queued else "one by one"
    if prompts.finished != names:
        raise RuntimeError(f"round {number} ({kind}): answered in the order {prompts.finished}")
    if any(prompts.results[name] != "end_turn" for name in names):
        raise RuntimeError(f"round {number} ({kind}): stop reasons {prompts.results}")
    requests = fake.stream_requests[before:]
    if len(requests) != QUEUED:
        raise RuntimeError(f"round {number} ({kind}): the model got {len(requests)} requests, not {QUEUED}")
    for n, request in enumerate(requests):
        if texts_of(request["messages"][-1]["content"]) != [texts[n]] or len(request["messages"]) != 2 * n + 1:
            raise RuntimeError(f"round {number} ({kind}): request {n} does not carry prompt {n} after "
                               "every earlier exchange")
    if agent.agent_text(session_id) != "".join(f"answer {n}. " for n in range(QUEUED)):
        raise RuntimeError(f"round {number} ({kind}): the answers streamed are not the 20 in order")
    wire = wire_of(agent)
    first, _ = wire.sent("session/prompt", lambda m: prompt_text(m) == texts[0])
    _, last_id = wire.sent("session/prompt", lambda m: prompt_text(m) == texts[-1])
    cycles = [ms(stamps.arrived[n] - stamps.released[n - 1]) for n in range(1, QUEUED)]
    return Round(queued, ms(wire.answered(last_id) - first), cycles)


# -- report


def row(label: str, values: Sequence[float]) -> str:
    return (f"  {label:<44} p50 {percentile(values, 0.5):7.2f}  p90 {percentile(values, 0.9):7.2f}  "
            f"p99 {percentile(values, 0.99):7.2f}  max {max(values):7.2f} ms")


def neighbour_differences(turns: Sequence[Turn], key: str) -> list[float]:
    """Steered minus plain for each A B / B A pair of neighbouring turns in one session."""
    out = []
    for first, second in zip(turns[::2], turns[1::2], strict=False):
        if first.session == second.session and first.steered != second.steered:
            steered, plain = (first, second) if first.steered else (second, first)
            out.append(getattr(steered, key) - getattr(plain, key))
    return out


def span_rows(turns: Sequence[Turn], key: str, label: str) -> tuple[float, float]:
    """Print one span of the turns, both kinds and the difference; (p50 difference, pairs' median)."""
    plain = [getattr(t, key) for t in turns if not t.steered]
    steered = [getattr(t, key) for t in turns if t.steered]
    print(row(f"{label}, plain", plain))
    print(row(f"{label}, steered", steered))
    added = {q: percentile(steered, q) - percentile(plain, q) for q in (0.5, 0.9, 0.99)}
    pairs = neighbour_differences(turns, key)
    print(f"  {'    added (steered − plain)':<44} p50 {added[0.5]:+7.2f}  p90 {added[0.9]:+7.2f}  "
          f"p99 {added[0.99]:+7.2f}    pairs' median {statistics.median(pairs):+6.2f} ms")
    return added[0.5], statistics.median(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return measure(argv)
    except RuntimeError as problem:  # a turn or a round broke a target outright (a steer late or lost, ...)
        print(f"target MISSED: {problem}")
        return 1


def measure(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--runs", type=int, default=RUNS, help=f"measured turns, half steered (default {RUNS})")
    parser.add_argument("--hold", type=float, default=HOLD_MS,
                        help=f"ms the tool stays held after the steer was taken (default {HOLD_MS:g})")
    parser.add_argument("--samples", type=int, default=IN_PROCESS,
                        help=f"in-process deliveries timed, and as many add_steer calls (default {IN_PROCESS})")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"rounds of {QUEUED} queued prompts, and as many sent one by one (default {ROUNDS})")
    parser.add_argument("--dir", default=None, help="where the in-process SessionDB lives (default: the temp dir)")
    parser.add_argument("--server", default=f"{sys.executable} -m acp_hermes", help="the agent command to measure")
    args = parser.parse_args(argv)
    server = shlex.split(args.server)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"steering and queueing, {os.cpu_count()} CPUs, Python {sys.version.split()[0]} (load {load})")

    with client_gc_off():
        turns = anyio.run(steer_turns, args.runs, args.hold, server)
    steered = sum(t.steered for t in turns)
    print(f"1. a steer sent while write_file waits for permission: {steered} steered and {len(turns) - steered} "
          "plain turns, every one two model requests, each steer right after its tool_result in the second")
    added: dict[str, tuple[float, float]] = {}
    for key, label in (("active_ms", "turn, without the hold"), ("next_request_ms", "release → next model request"),
                       ("after_ms", "release → answer")):
        added[key] = span_rows(turns, key, label)
    turn_added = max(added["active_ms"])

    delivery, alone = anyio.run(in_process, args.samples, args.dir)
    print(f"2. in-process, one steer waiting before a model request ({len(delivery)} samples each):")
    print(row("delivery (take, add_steer, user_message_chunk)", delivery))
    print(row("  Transcript.add_steer alone", alone))

    with client_gc_off():
        rounds = anyio.run(queue_rounds, args.rounds, server)
    print(f"3. {QUEUED} prompts to one session: {sum(r.queued for r in rounds)} rounds queued (sent at once), "
          f"{sum(not r.queued for r in rounds)} one by one; every prompt answered end_turn in send order, "
          f"the model saw all {QUEUED} in order")
    for queued, label in ((True, "queued"), (False, "one by one")):
        totals = [r.total_ms for r in rounds if r.queued == queued]
        cycles = [c for r in rounds if r.queued == queued for c in r.cycles_ms]
        print(f"  {label:<11} first sent → last answer: median {statistics.median(totals):6.1f} ms "
              f"[{min(totals):.1f}–{max(totals):.1f}], {statistics.median(totals) / QUEUED:5.2f} ms a prompt;  "
              f"model reply → next turn's request p50 {percentile(cycles, 0.5):.2f}, "
              f"p99 {percentile(cycles, 0.99):.2f} ms")

    checks = [  # the checks of every turn and round raise when one fails: reaching here, they held
        ("a steer is in the very next request, no extra request (every turn)", True),
        (f"a steer adds ≤ {TARGET_ADDED_MS:g} ms to its turn (end to end: p50 and the pairs' median)",
         turn_added <= TARGET_ADDED_MS),
        (f"in-process delivery p99 ≤ {TARGET_ADDED_MS:g} ms", percentile(delivery, 0.99) <= TARGET_ADDED_MS),
        (f"{QUEUED} queued prompts all answered, in order, nothing lost (every round)", True),
    ]
    for name, ok in checks:
        print(f"target {name}: {'met' if ok else 'MISSED'}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
