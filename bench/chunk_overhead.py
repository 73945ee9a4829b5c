"""Server overhead per streamed chunk: fake model delta in → ``session/update`` written.

    .venv/bin/python bench/chunk_overhead.py                  # 5,000 paced + 5,000 burst deltas
    .venv/bin/python bench/chunk_overhead.py --deltas 20000 --interval-ms 1

Method (see bench/README.md): a fake Anthropic Messages API runs in a thread of this process
and streams replies of text deltas, one SSE event per delta. It takes a timestamp right after
the write of each event returns; this process's pipe reader takes one as soon as the matching
``agent_message_chunk`` line arrives on the spawned ``acp-hermes``'s stdout. Both are this
process's ``perf_counter_ns``, so the difference is exact: it is everything between the model's
socket and the editor's pipe — the server's work plus the transfer.

The transfer is measured the same way with a relay that does nothing else: this script with
``--relay URL``, a minimal asyncio process that reads the same SSE stream from the same fake
model and forwards each delta event's JSON line to stdout as is. Its median latency (two kernel
hops, two process wake-ups, a line split) is what is subtracted from acp-hermes's percentiles.

Deltas are paced (default one every 2 ms, faster than any real model streams tokens) so that each
chunk is handled on its own and the latency is one chunk's cost, not time spent queued behind
earlier chunks. Relay and server take turns in rounds, so a busy spell on a shared machine hits
both. A last reply of N deltas sent back to back gives the throughput.

Target: server overhead per chunk p99 ≤ 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from startup import VENV_BIN, AgentProcess, add_server_option, editor_env, initialize_params, scratch_dirs

from acp_hermes.testing.scripted_model import encode_sse

TARGET_P99_MS = 1.0
RELAY_COMMAND = (str(VENV_BIN / "python"), __file__, "--relay")


def delta_text(index: int) -> str:
    """A token-sized delta that names its own position, so each chunk can be matched."""
    return f" w{index:06d}"


# ----------------------------------------------------------------------------------------------------
# The fake model: SSE events written one by one, each timestamped once it has been handed to the kernel


@dataclass
class Reply:
    """One streamed reply: ``count`` deltas, ``interval`` seconds apart (0: back to back)."""

    count: int
    interval: float
    sent_ns: list[int] = field(default_factory=list)


class FakeModel:
    """Answers streamed requests with the queued replies, in order; anything else with a short text."""

    def __init__(self) -> None:
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._httpd = _Server(self)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-model", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, reply: Reply) -> Reply:
        with self._lock:
            self._replies.append(reply)
        return reply

    def next_reply(self) -> Reply:
        with self._lock:
            return self._replies.pop(0) if self._replies else Reply(count=3, interval=0.0)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: FakeModel) -> None:
        self.model = model
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up is no news
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Each event leaves at once, as from a real streaming server (no Nagle batching).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if not body.get("stream"):  # the session title, asked for after the first turn
            self._send_json(_message(body, "A title"))
            return
        self._stream(body, self.server.model.next_reply())

    def _send_json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: dict[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        start = _message(body, "")
        start["usage"]["output_tokens"] = 1
        self._event("message_start", {"type": "message_start", "message": start})
        self._event("content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        next_at = time.perf_counter()
        for index in range(reply.count):
            if reply.interval:
                next_at += reply.interval
                time.sleep(max(0.0, next_at - time.perf_counter()))
            delta = {"type": "text_delta", "text": delta_text(index)}
            self._event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            reply.sent_ns.append(time.perf_counter_ns())
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                          "stop_sequence": None},
                                      "usage": {"output_tokens": reply.count}})
        self._event("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")

    def _event(self, name: str, data: dict[str, Any]) -> None:
        payload = encode_sse(name, data)
        self.wfile.write(f"{len(payload):X}\r\n".encode() + payload + b"\r\n")


def _message(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": body.get("model") or "bench",
        "content": [{"type": "text", "text": text}] if text else [], "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0},
    }


# ----------------------------------------------------------------------------------------------------
# Receiving: which delta each line carries, and when it arrived


def chunk_index(message: dict[str, Any]) -> int | None:
    """The delta a ``session/update`` (or a relay line) carries, if it is a text chunk."""
    if message.get("type") == "content_block_delta":  # the relay forwards the model's events
        text = message["delta"]["text"]
    else:
        update = (message.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") != "agent_message_chunk":
            return None
        text = (update.get("content") or {}).get("text", "")
    return int(text[2:]) if text.startswith(" w") and text[2:].isdigit() else None


def latencies_ms(reply: Reply, received: dict[int, int]) -> list[float]:
    missing = [i for i in range(reply.count) if i not in received]
    if missing:
        raise RuntimeError(f"{len(missing)} of {reply.count} deltas never arrived (first: {missing[0]})")
    return [(received[i] - reply.sent_ns[i]) / 1e6 for i in range(reply.count)]


def collect(process: AgentProcess, finished: Callable[[dict[str, Any]], bool]) -> dict[int, int]:
    """Arrival time of every delta, by index, reading until ``finished`` says the reply is over."""
    received: dict[int, int] = {}
    while True:
        line = process.next_line()
        index = chunk_index(line.message)
        if index is not None:
            received.setdefault(index, line.at_ns)
        elif finished(line.message):
            return received


@dataclass
class Measured:
    transfer_ms: list[float]
    paced_ms: list[float]
    burst_ms: list[float]
    burst_total_ms: float


def measure(server: Sequence[str], model: FakeModel, count: int, interval: float, rounds: int) -> Measured:
    """Relay and server take turns, ``rounds`` times, so a busy spell on the machine hits both."""
    with scratch_dirs() as (home, workspace):
        agent = AgentProcess(server, editor_env(home, model.base_url), workspace)
        try:
            agent.request("initialize", initialize_params())
            new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
            session_id = new.message["result"]["sessionId"]

            def run(reply: Reply) -> dict[int, int]:
                model.queue(reply)
                prompt_id = agent.send("session/prompt", {"sessionId": session_id,
                                                          "prompt": [{"type": "text", "text": "Stream."}]})
                return collect(agent, lambda m: m.get("id") == prompt_id and "result" in m)

            run(Reply(count=200, interval=0.0))  # warm-up turn: model SDK, tools, first-use paths
            transfer: list[float] = []
            paced: list[float] = []
            for _ in range(rounds):
                transfer += relay_latencies(model, count // rounds, interval)
                reply = Reply(count=count // rounds, interval=interval)
                paced += latencies_ms(reply, run(reply))
            burst = Reply(count=count, interval=0.0)
            received = run(burst)
            burst_total = (max(received.values()) - burst.sent_ns[0]) / 1e6
            return Measured(transfer, paced, latencies_ms(burst, received), burst_total)
        finally:
            agent.close()


def relay_latencies(model: FakeModel, count: int, interval: float) -> list[float]:
    with scratch_dirs() as (home, workspace):
        reply = model.queue(Reply(count=count, interval=interval))
        relay = AgentProcess((*RELAY_COMMAND, model.base_url), editor_env(home), workspace)
        try:
            received = collect(relay, lambda m: bool(m.get("end")))
        finally:
            relay.close()
        return latencies_ms(reply, received)


# ----------------------------------------------------------------------------------------------------
# The relay: the least any process can do between the model's socket and the editor's pipe


async def relay(base_url: str) -> None:
    host, port = base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = json.dumps({"model": "relay", "max_tokens": 16, "stream": True,
                       "messages": [{"role": "user", "content": "Stream."}]}).encode()
    writer.write(b"POST /v1/messages HTTP/1.1\r\nhost: relay\r\ncontent-type: application/json\r\n"
                 + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()
    out = sys.stdout.buffer
    while line := await reader.readline():
        if line.startswith(b"data: ") and b"content_block_delta" in line:
            out.write(line[6:])  # the event's JSON, forwarded as is: one line each
            out.flush()
        elif line.startswith(b"data: ") and b"message_stop" in line:
            break
    out.write(b'{"end": true}\n')
    out.flush()
    writer.close()


# ----------------------------------------------------------------------------------------------------
# Reporting


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def row(label: str, values: Sequence[float], minus: float = 0.0) -> str:
    points = [statistics.median(values), percentile(values, 0.9), percentile(values, 0.99), max(values)]
    return f"{label:34}" + "".join(f"{point - minus:>9.3f}" for point in points)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=5_000, help="text deltas per measured reply (default 5000)")
    parser.add_argument("--interval-ms", type=float, default=2.0, help="pacing of the paced reply (default 2 ms)")
    parser.add_argument("--rounds", type=int, default=5, help="relay/server alternations (default 5)")
    parser.add_argument("--relay", metavar="URL", help=argparse.SUPPRESS)
    add_server_option(parser)
    args = parser.parse_args(argv)
    if args.relay:
        asyncio.run(relay(args.relay))
        return 0
    sys.setswitchinterval(1e-4)  # our reader thread must get the GIL at once when a line arrives
    interval = args.interval_ms / 1000
    with FakeModel() as model:
        server = measure(shlex.split(args.server), model, args.deltas, interval, args.rounds)
    transfer = server.transfer_ms
    floor = statistics.median(transfer)
    net = [value - floor for value in server.paced_ms]
    p99 = percentile(net, 0.99)
    print(f"\n{args.deltas} text deltas, one every {args.interval_ms:g} ms, in {args.rounds} rounds of relay then "
          "server; latency from the fake model's write to the client's read (ms)")
    print(f"{'':34}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}")
    print(row("relay (pipe + socket transfer)", transfer))
    print(row("acp-hermes", server.paced_ms))
    print(row("acp-hermes − relay median", server.paced_ms, minus=floor)
          + f"   p99 ≤ {TARGET_P99_MS:g} ms: {'ok' if p99 <= TARGET_P99_MS else 'MISSED'}")
    per_chunk_us = server.burst_total_ms * 1000 / args.deltas
    print(f"\nburst: {args.deltas} deltas back to back reached the client in {server.burst_total_ms:.0f} ms "
          f"({per_chunk_us:.0f} µs per chunk, {1e6 / per_chunk_us:,.0f} chunks/s); latency there is queueing:")
    print(row("acp-hermes, burst", server.burst_ms))
    return 0 if p99 <= TARGET_P99_MS else 1


if __name__ == "__main__":
    sys.exit(main())
