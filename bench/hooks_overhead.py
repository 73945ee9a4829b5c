"""What hooks add to each tool call, over real stdio (issue 30).

    .venv/bin/python bench/hooks_overhead.py                    # 4 rounds of 50 reads per build
    .venv/bin/python bench/hooks_overhead.py --rounds 8 --main /work/main/.venv/bin/python

Targets: with no hooks configured, the per-call time is within noise of main's; with one matching
hook that exits at once (``true``, through ``/bin/sh``, process start included), the hook adds at most
30 ms to its call (p50).

Three real servers run side by side, each with its own scripted model asking for one small
``read_file`` per response (no permission question: nothing but the call and the hook is measured):
``main`` (the interpreter given by ``--main``, whose package is main's checkout), ``none`` (this
build, no hooks) and ``hook`` (this build, one PreToolUse hook matching ``Read``). Their blocks of 50
calls, each in a new session, alternate round by round so all three see the same machine. A call's
span is from its ``tool_call`` (pending) to its final ``tool_call_update``, as the client reads them.
The load average is printed: on a busy machine the tails grow.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from acp_hermes.testing.scripted_model import (
    MessageReply,
    ModelRequest,
    Reply,
    ScriptedModelServer,
    TextBlock,
    ToolUseBlock,
)

CALLS = 50
TARGET_ADDED_P50_MS = 30.0
HOOK_CONFIG = 'hooks: {PreToolUse: [{matcher: "Read", hooks: [{type: command, command: "true"}]}]}\n'


class Script:
    """Endless blocks: ``CALLS`` reads, then an answer; non-streamed requests (titles) get a title."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, request: ModelRequest) -> Reply:
        if not request.stream:
            return MessageReply([TextBlock("Benchmark")], stop_reason="end_turn")
        with self._lock:
            self._count += 1
            if self._count % (CALLS + 1) == 0:
                return MessageReply([TextBlock("Done.")], stop_reason="end_turn")
            return MessageReply([ToolUseBlock(f"toolu_{self._count:06d}", "read_file", {"path": "a.py"})],
                                stop_reason="tool_use")


class Spans:
    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.spans: list[float] = []

    def observe(self, event: StreamEvent) -> None:
        if event.direction != StreamDirection.INCOMING or event.message.get("method") != "session/update":
            return
        update = event.message["params"]["update"]
        kind, call = update.get("sessionUpdate"), update.get("toolCallId")
        if kind == "tool_call":
            self.started[call] = time.perf_counter()
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed") and call in self.started:
            self.spans.append((time.perf_counter() - self.started.pop(call)) * 1000)


class Quiet:
    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no read should ask")

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


class Server:
    def __init__(self, name: str, python: str, workdir: Path, config: str) -> None:
        self.name, self.python, self.spans = name, python, Spans()
        self.home, self.workspace = workdir / name / "home", workdir / name / "workspace"
        (self.home / "acp-hermes").mkdir(parents=True)
        self.workspace.mkdir(parents=True)
        (self.workspace / "a.py").write_text("".join(f"def f{n}(x):\n    return x * {n}\n\n" for n in range(40)))
        (self.home / "acp-hermes" / "config.yaml").write_text("learning_loop: false\n" + config)
        self.model = ScriptedModelServer(Script()).start()

    async def run(self, rounds: asyncio.Queue[int], done: asyncio.Event, turn: dict[str, asyncio.Event]) -> None:
        env = {"HERMES_HOME": str(self.home), "ANTHROPIC_BASE_URL": self.model.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-bench", "PYTHONUNBUFFERED": "1", "PATH": os.environ["PATH"]}
        with (self.home / "server.log").open("ab") as stderr:
            async with spawn_agent_process(Quiet(), self.python, "-m", "acp_hermes", env=env,
                                           cwd=str(self.workspace), transport_kwargs={"stderr": stderr},
                                           observers=[self.spans.observe]) as (conn, _process):
                await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False),
                    client_info=Implementation(name="hooks-bench", version="1"))
                while True:
                    await turn[self.name].wait()
                    turn[self.name].clear()
                    if done.is_set():
                        return
                    session = await conn.new_session(cwd=str(self.workspace), mcp_servers=[])
                    response = await conn.prompt(session_id=session.session_id, prompt=[text_block("read")])
                    if response.stop_reason != "end_turn":
                        raise RuntimeError(f"{self.name}: the prompt ended with {response.stop_reason}")
                    await rounds.put(1)


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4, help="blocks of 50 calls per build (after one warm-up)")
    parser.add_argument("--main", default="/work/main/.venv/bin/python", help="an interpreter with main's build")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as directory:
        workdir = Path(directory)
        servers = [Server("none", sys.executable, workdir, ""), Server("hook", sys.executable, workdir, HOOK_CONFIG)]
        if args.main and Path(args.main).exists():
            servers.insert(0, Server("main", args.main, workdir, ""))
        turn = {server.name: asyncio.Event() for server in servers}
        finished, done = asyncio.Queue[int](), asyncio.Event()
        tasks = [asyncio.create_task(server.run(finished, done, turn)) for server in servers]
        try:
            for round_index in range(args.rounds + 1):
                for server in servers:  # one at a time: each block has the machine to itself
                    turn[server.name].set()
                    await finished.get()
                if round_index == 0:  # the warm-up round is not counted
                    for server in servers:
                        server.spans.spans.clear()
        finally:
            done.set()
            for event in turn.values():
                event.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for server in servers:
                server.model.close()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {CALLS} reads per build")
    print(f"{'build':<6} {'calls':>6} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    p50 = {}
    for server in servers:
        spans = server.spans.spans
        p50[server.name] = statistics.median(spans)
        print(f"{server.name:<6} {len(spans):>6} {p50[server.name]:>8.2f} {quantile(spans, 0.9):>8.2f} "
              f"{quantile(spans, 0.99):>8.2f}")
    if "main" in p50:
        print(f"no hooks vs main: {p50['none'] - p50['main']:+.2f} ms at p50")
    added = p50["hook"] - p50["none"]
    print(f"one matching hook adds {added:.2f} ms at p50 (target <= {TARGET_ADDED_P50_MS:g} ms): "
          f"{'met' if added <= TARGET_ADDED_P50_MS else 'NOT MET'}")
    return 0 if added <= TARGET_ADDED_P50_MS else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
