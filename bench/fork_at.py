"""session/fork at a message of a 5,000-message session through the real server.

    .venv/bin/python bench/fork_at.py                  # 10 cold forks at message 5,000, 10 at the middle
    .venv/bin/python bench/fork_at.py --runs 20 --messages 5000

The session is the one ``bench/replay.py`` writes (prompts, model messages with tool calls, results
with their replay records). Each run spawns ``acp-hermes`` on that HERMES_HOME the way an editor does,
initializes, and times ``session/fork`` with ``messageId`` from the request to its response (the
source and the message looked up, the answer given), then until the fork is ready: a request on it
(``session/set_mode`` to the mode it has) waits while the rows up to the message are copied into the new session
in one statement and read back into a live session, which the server does just after answering.
At message 5,000 (the last) nothing follows, so no checkpoint is looked
up; at the middle the source's checkpoint store is opened to say which ``/rollback`` matches. Every
fork's row count is checked against the messages up to the fork point.

Target: ≤ 300 ms at message 5,000 of 5,000 (the same as session/load).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from replay import SESSION_ID, build_session
from startup import AgentProcess, add_server_option, cpu_ns, editor_env, initialize_params, scratch_dirs

from acp_hermes_memory.session_db import SessionDB

TARGET_MS = 300.0


def fork_points(home: Path) -> dict[str, tuple[str, int]]:
    """The message id and the rows a fork keeps: at the last message, and at the model message nearest
    the middle (its tool results kept with it)."""
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        rows = db.messages(SESSION_ID)
    replies = [n for n, row in enumerate(rows) if row.role == "assistant"]
    middle = min(replies, key=lambda n: abs(n - len(rows) // 2))
    end = middle + 1
    while end < len(rows) and rows[end].role == "tool":
        end += 1
    return {"last": (rows[-1].display["message_id"], len(rows)),
            "middle": (rows[middle].display["message_id"], end)}


def fork_once(server: Sequence[str], home: Path, workspace: Path, message_id: str,
              kept: int) -> tuple[float, float, float]:
    """(answered, ready, server CPU until ready) in ms."""
    agent = AgentProcess(server, editor_env(home), workspace)
    try:
        agent.request("initialize", initialize_params())
        cpu_before = cpu_ns(agent.pid)
        sent_ns = time.perf_counter_ns()
        line = agent.request("session/fork", {"sessionId": SESSION_ID, "cwd": str(workspace), "mcpServers": [],
                                              "messageId": message_id})
        answered_ms = (line.at_ns - sent_ns) / 1e6
        fork_id = line.message["result"]["sessionId"]
        mode = line.message["result"]["modes"]["currentModeId"]  # set to what it is: the cheapest request that waits
        ready = agent.request("session/set_mode", {"sessionId": fork_id, "modeId": mode})
        ready_ms = (ready.at_ns - sent_ns) / 1e6
        cpu_ms = (cpu_ns(agent.pid) - cpu_before) / 1e6
    finally:
        agent.close()
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        copied = len(db.messages(fork_id))
        db.delete_session(fork_id)
    if copied != kept:
        raise RuntimeError(f"the fork holds {copied} messages, not the {kept} up to the fork point")
    return answered_ms, ready_ms, cpu_ms


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=5_000, help="messages in the session (default 5000)")
    parser.add_argument("--runs", type=int, default=10, help="cold forks per fork point (default 10)")
    parser.add_argument("--seed", type=int, default=7)
    add_server_option(parser)
    args = parser.parse_args(argv)
    server = shlex.split(args.server)
    results: dict[str, list[tuple[float, float, float]]] = {}
    with scratch_dirs() as (home, workspace):
        written = build_session(home, workspace, args.messages, args.seed)
        points = fork_points(home)
        fork_once(server, home, workspace, *points["middle"])  # unmeasured: page cache, .pyc, the checkpoint store
        for name, (message_id, kept) in points.items():
            results[name] = [fork_once(server, home, workspace, message_id, kept) for _ in range(args.runs)]
            print(f"\r{name}: {args.runs} runs", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    print(f"\nsession/fork with messageId in a {written}-message session, {args.runs} cold processes each")
    for name, runs in results.items():
        kept = points[name][1]
        answered, ready, cpu = ([run[n] for run in runs] for n in range(3))
        print(f"  at message {kept:,} ({name}): answered median {statistics.median(answered):.0f} ms "
              f"[{min(answered):.0f}–{max(answered):.0f}]; ready median {statistics.median(ready):.0f} ms "
              f"[{min(ready):.0f}–{max(ready):.0f}], server CPU until then median {statistics.median(cpu):.0f} ms")
    median = statistics.median(run[0] for run in results["last"])
    print(f"at message {written:,} of {written:,}: ≤ {TARGET_MS:.0f} ms: {'ok' if median <= TARGET_MS else 'MISSED'}")
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
