"""What a permission prompt and the tool call rendering add to each tool call, over real stdio.

    .venv/bin/python bench/permission_overhead.py               # 300 measured edits per mode
    .venv/bin/python bench/permission_overhead.py --calls 1000

Target (issue 3): the added latency of the permission round trip and rendering per tool call,
excluding the user's think time and the tool's own work, has p99 <= 5 ms.

The real server (``python -m acp_hermes``) is driven by a minimal ACP client that answers every
permission request at once with "allow once" (no think time) and timestamps each message as it
is read off the agent's stdout. A scripted model asks for one small ``patch`` edit per response,
so calls run one at a time. The edits come in blocks of 50, each in a new session, alternating
``default`` mode (every edit asks through ``session/request_permission``) and ``bypass`` mode
(the same kind of edit, no prompt), so both modes run under the same conditions in one process.

Per call the editor sees the ``tool_call`` (pending) arrive, in default mode the question, then
``in_progress`` (sent once the call is approved) and the final ``tool_call_update``. Both modes
do the same work up to the gate's decision D. In bypass mode the gate then sends ``in_progress``
at once; in default mode it sends the question instead, which costs the same to build, encode
and deliver, and ``in_progress`` follows the answer. So, per asked call,

    added = (question -> in_progress) + rendering

where question -> in_progress (timestamped by the client) is the client's instant answer, its
way back, the gate's decision and the ``in_progress`` update, and rendering is the CPU time to
build and JSON-encode all of the call's messages (the question and the three updates), measured
in-process on the same payloads. Counting all of rendering, although bypass mode renders the
updates too, makes ``added`` an upper bound. The target is checked on its p99.

As a cross-check the whole spans (pending -> final) of both modes are compared at p50 and p99
(span shift); that difference of quantiles is much noisier on a busy machine.

Also printed: the default span split at the question and at ``in_progress``, and the tool's
own work (the same edits dispatched in-process with an allow-all gate) for scale. Everything
runs on a tmpfs (``/dev/shm``) when there is one, so disk flushes of the edited file and of
state.db, which are neither permission nor rendering work, do not drown the figures; ``--dir``
measures elsewhere. The load average is printed: on a busy machine the tails grow.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
)

from acp_hermes.adapter.render import render_update, tool_content
from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
from acp_hermes.testing.scripted_model import (
    MessageReply,
    ModelRequest,
    Reply,
    ScriptedModelServer,
    TextBlock,
    ToolUseBlock,
)
from acp_hermes_tools import core_tools
from acp_hermes_tools.context import Permit, ToolContext, ToolScope
from acp_hermes_tools.contracts import DiffDisplay, Location, Request, TextDisplay, ToolCallUpdated, ToolEvent
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.registry import ToolCall, ToolRegistry

TARGET_P99_MS = 5.0
CALLS_PER_PROMPT = 50  # stays under the default iteration budget of 90 model calls per turn
COUNTER_FILE = "counter.py"


# ---------------------------------------------------------------------------------------------
# The script: one small edit per model response


def edit_arguments(index: int) -> dict[str, Any]:
    return {"mode": "replace", "path": COUNTER_FILE, "old_string": f"VALUE = {index}\n",
            "new_string": f"VALUE = {index + 1}\n"}


def counter_text(index: int) -> str:
    """The edited file before edit ``index``: a realistic module, one line of which changes."""
    body = "".join(f"def helper_{n}(x):\n    return x * {n}\n\n\n" for n in range(40))
    return f'"""Counter."""\n\nVALUE = {index}\n\n\n{body}'


class Script:
    """Serves the edits in order to streamed requests; non-streamed ones (titles) get a title."""

    def __init__(self, prompt_sizes: Sequence[int]) -> None:
        self._replies = iter(self._all(prompt_sizes))
        self._lock = threading.Lock()

    @staticmethod
    def _all(prompt_sizes: Sequence[int]) -> Iterator[Reply]:
        index = 0
        for size in prompt_sizes:
            for _ in range(size):
                call = ToolUseBlock(f"toolu_{index:05d}", "patch", edit_arguments(index))
                yield MessageReply([call], stop_reason="tool_use")
                index += 1
            yield MessageReply([TextBlock("Done.")], stop_reason="end_turn")

    def __call__(self, request: ModelRequest) -> Reply:
        if not request.stream:
            return MessageReply([TextBlock("Benchmark")], stop_reason="end_turn")
        with self._lock:
            return next(self._replies)


# ---------------------------------------------------------------------------------------------
# The client side: answer at once, timestamp what arrives


@dataclass
class CallTimes:
    announced: float | None = None
    asked: float | None = None
    answered: float | None = None
    in_progress: float | None = None
    final: float | None = None


@dataclass
class Timeline:
    calls: dict[str, CallTimes] = field(default_factory=dict)
    _request_calls: dict[Any, str] = field(default_factory=dict)

    def observe(self, event: StreamEvent) -> None:
        now = time.perf_counter()
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            call_id = self._request_calls.pop(message.get("id"), None) if "result" in message else None
            if call_id is not None:
                self.calls[call_id].answered = now
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method == "session/request_permission":
            call_id = params["toolCall"]["toolCallId"]
            self.calls[call_id].asked = now
            self._request_calls[message["id"]] = call_id
        elif method == "session/update":
            update = params["update"]
            call_id = update.get("toolCallId")
            if call_id is None:
                return
            times = self.calls.setdefault(call_id, CallTimes())
            status = update.get("status")
            if update["sessionUpdate"] == "tool_call":
                times.announced = now
            elif status == "in_progress" and times.in_progress is None:
                times.in_progress = now
            elif status in ("completed", "failed"):
                times.final = now


class InstantClient:
    """An editor whose user answers every permission request with "allow once" instantly."""

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        chosen = next(o.option_id for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


@dataclass(frozen=True)
class Block:
    """``calls`` edits in one prompt of a new session in ``mode``."""

    mode: str
    calls: int


def plan_blocks(calls: int, warmup: int) -> list[Block]:
    """A warm-up, then default and bypass blocks alternating so both see the same conditions."""
    blocks = [Block("bypass", warmup)] if warmup else []
    for _ in range(math.ceil(calls / CALLS_PER_PROMPT)):
        blocks += [Block("default", CALLS_PER_PROMPT), Block("bypass", CALLS_PER_PROMPT)]
    return blocks


async def drive_server(blocks: Sequence[Block], workdir: Path) -> Timeline:
    """Run the blocks' edits through one server, each block in a new session; every call's timeline."""
    workspace = workdir / "workspace"
    workspace.mkdir()
    (workspace / COUNTER_FILE).write_text(counter_text(0))
    model = ScriptedModelServer(Script([block.calls for block in blocks])).start()
    timeline = Timeline()
    own = workdir / "hermes-home" / "acp-hermes"
    own.mkdir(parents=True, exist_ok=True)
    (own / "config.yaml").write_text("learning_loop: false\n")  # the edits alone: no background reviews
    env = {"HERMES_HOME": str(workdir / "hermes-home"), "ANTHROPIC_BASE_URL": model.base_url,
           "ANTHROPIC_API_KEY": "sk-ant-bench", "PYTHONUNBUFFERED": "1"}
    try:
        with (workdir / "server.log").open("ab") as stderr:
            async with spawn_agent_process(
                InstantClient(), sys.executable, "-m", "acp_hermes", env=env, cwd=str(workspace),
                transport_kwargs={"stderr": stderr}, observers=[timeline.observe],
            ) as (conn, _process):
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
                    ),
                    client_info=Implementation(name="permission-bench", version="1"),
                )
                for block in blocks:
                    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                    await conn.set_session_mode(session_id=session.session_id, mode_id=block.mode)
                    response = await conn.prompt(session_id=session.session_id, prompt=[text_block("edit")])
                    if response.stop_reason != "end_turn":
                        raise RuntimeError(f"a {block.mode} prompt ended with {response.stop_reason}")
    finally:
        model.close()
    if (workspace / COUNTER_FILE).read_text() != counter_text(sum(block.calls for block in blocks)):
        raise RuntimeError("the edits did not all land")
    return timeline


# ---------------------------------------------------------------------------------------------
# In-process baselines: the tool's own work, and rendering


class AllowAll:
    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        return Permit()


class Discard:
    async def emit(self, event: ToolEvent) -> None:
        return None


async def tool_work(calls: int, workdir: Path) -> list[float]:
    """Seconds each edit takes when dispatched in-process with nothing to ask and nobody to tell."""
    root = (workdir / "in-process").resolve()
    root.mkdir()
    (root / COUNTER_FILE).write_text(counter_text(0))
    registry = ToolRegistry(core_tools())
    editor = LocalEditor()
    scope = ToolScope(session_id="bench", cwd=root, roots=(root,))
    durations = []
    for index in range(calls):
        ctx = ToolContext(call_id=f"toolu_{index}", scope=scope, editor=editor, gate=AllowAll(), sink=Discard())
        call = ToolCall(f"toolu_{index}", "patch", edit_arguments(index))
        started = time.perf_counter()
        result = await registry.dispatch(call, ctx)
        durations.append(time.perf_counter() - started)
        if not result.ok:
            raise RuntimeError(f"in-process edit {index} failed: {result.text}")
    return durations


def rendering(calls: int, workdir: Path) -> list[float]:
    """Seconds to build and encode one edit's messages: announce, question, in_progress, final."""
    path = str(workdir / COUNTER_FILE)
    durations = []
    for index in range(calls):
        old, new = counter_text(index), counter_text(index + 1)
        diff = (DiffDisplay(path, old, new),)
        events = [
            ToolCallStarted(f"toolu_{index}", "patch", f"Edit {COUNTER_FILE}", "edit", edit_arguments(index),
                            (Location(path),)),
            ToolCallUpdated(f"toolu_{index}", display=diff),
            ToolCallFinished(f"toolu_{index}", "completed", (*diff, TextDisplay("Edited", "")), (Location(path, 3),)),
        ]
        started = time.perf_counter()
        for event in events:
            json.dumps({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": "s", "update": render_update(event)}})
        json.dumps({"jsonrpc": "2.0", "id": index, "method": "session/request_permission",
                    "params": {"sessionId": "s", "toolCall": {"toolCallId": f"toolu_{index}", "title": "Edit",
                                                              "kind": "edit", "status": "pending",
                                                              "content": [tool_content(d) for d in diff]}}})
        durations.append(time.perf_counter() - started)
    return durations


# ---------------------------------------------------------------------------------------------
# Report


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def line(label: str, seconds: Sequence[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (f"  {label:<42} p50 {quantile(ms, 0.5):7.3f} ms   p99 {quantile(ms, 0.99):7.3f} ms   "
            f"mean {statistics.fmean(ms):7.3f} ms   max {max(ms):7.3f} ms")


def spans(calls: Sequence[CallTimes]) -> list[float]:
    return [need(times.final) - need(times.announced) for times in calls]


def default_directory() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="measured edit calls per mode (>= 200)")
    parser.add_argument("--warmup", type=int, default=20, help="calls run first and not measured")
    parser.add_argument("--dir", default=default_directory(), help="where the workspace and HERMES_HOME live")
    args = parser.parse_args()
    blocks = plan_blocks(args.calls, args.warmup)
    total = sum(block.calls for block in blocks)
    with tempfile.TemporaryDirectory(prefix="acp-hermes-permission-bench-", dir=args.dir) as tmp:
        workdir = Path(tmp)
        timeline = await drive_server(blocks, workdir)
        work = (await tool_work(total, workdir))[args.warmup :]
        render = rendering(total, workdir)[args.warmup :]
    modes = [block.mode for block in blocks for _ in range(block.calls)][args.warmup :]
    ids = [f"toolu_{index:05d}" for index in range(args.warmup, total)]
    asked = [timeline.calls[i] for i, mode in zip(ids, modes, strict=True) if mode == "default"]
    free = [timeline.calls[i] for i, mode in zip(ids, modes, strict=True) if mode == "bypass"]
    if any(t.asked is None for t in asked) or any(t.asked is not None for t in free):
        raise RuntimeError("default mode must ask for every edit and bypass for none")
    default_spans, bypass_spans = spans(asked), spans(free)
    approval = [need(t.in_progress) - need(t.asked) for t in asked]
    asked_render = [cost for cost, mode in zip(render, modes, strict=True) if mode == "default"]
    added = [leg + cost for leg, cost in zip(approval, asked_render, strict=True)]

    print(f"permission overhead: {len(asked)} edit calls asked (default mode) and {len(free)} not asked "
          f"(bypass), {args.warmup} warm-up, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"files in {args.dir or tempfile.gettempdir()}, load average {os.getloadavg()[0]:.2f} at the end")
    print(line("span pending -> final, default", default_spans))
    print(line("span pending -> final, bypass", bypass_spans))
    print(line("  default: pending -> question", [need(t.asked) - need(t.announced) for t in asked]))
    print(line("  default: question -> in_progress", approval))
    print(line("  default: in_progress -> final", [need(t.final) - need(t.in_progress) for t in asked]))
    print(line("tool's own work (in-process)", work))
    print(line("rendering (build + encode)", render))
    shift = {q: (quantile(default_spans, q) - quantile(bypass_spans, q)) * 1000 for q in (0.5, 0.99)}
    print(f"  {'span shift default - bypass':<42} p50 {shift[0.5]:7.3f} ms   p99 {shift[0.99]:7.3f} ms")
    print(line("added = question->in_progress + rendering", added))
    p99 = quantile(added, 0.99) * 1000
    verdict = "PASS" if p99 <= TARGET_P99_MS else "FAIL"
    print(f"target: added p99 <= {TARGET_P99_MS:g} ms -> {p99:.3f} ms {verdict}")
    return 0 if verdict == "PASS" else 1


def need(value: float | None) -> float:
    if value is None:
        raise RuntimeError("a call is missing a timestamp")
    return value


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
