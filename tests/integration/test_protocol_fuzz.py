"""A seeded, bounded fuzz of the protocol edge through the real server on raw pipes.

Valid requests for every method are mutated (wrong types, missing and extra fields, NUL bytes,
deep nesting, colliding ``_meta`` keys, odd ids) and mixed with malformed lines (garbage bytes,
truncated JSON, batches, deep arrays). The server must stay up, answer every request exactly
once, never blame itself (-32603) for what the client sent, and write nothing but JSON-RPC.
``ACP_HERMES_FUZZ_SEEDS=1,2,3`` runs other seeds (the suite runs three fixed ones).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.acp_harness import raw_agent, write_config

SEEDS = (20261124, 7, 1234)
MESSAGES = 400
INTERNAL_ERROR = -32603
JUNK: list[Any] = [None, True, 0, -1, 1.5, "", "x" * 5000, "nul\0byte", "/abs/\0path", [], {}, [1, [2, [3]]],
                   {"nested": {"deep": [None]}}, "😀 ünïcödé", "../relative", 10**30]


def valid_requests(workspace: str) -> dict[str, dict[str, Any]]:
    session = "00000000-0000-0000-0000-000000000000"
    return {
        "initialize": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        "authenticate": {"methodId": "anthropic-api-key"},
        "session/new": {"cwd": workspace, "mcpServers": []},
        "session/load": {"sessionId": session, "cwd": workspace, "mcpServers": []},
        "session/resume": {"sessionId": session, "cwd": workspace},
        "session/fork": {"sessionId": session, "cwd": workspace},
        "session/list": {"cwd": workspace},
        "session/close": {"sessionId": session},
        "session/delete": {"sessionId": session},
        "session/set_mode": {"sessionId": session, "modeId": "plan"},
        "session/set_config_option": {"sessionId": session, "configId": "mode", "value": "plan"},
        "session/prompt": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]},
        "session/cancel": {"sessionId": session},
        "no/such_method": {},
        "_vendor/extension": {"x": 1},
    }


def nested(depth: int) -> str:
    """A placeholder ``encode`` replaces by arrays nested ``depth`` deep (json.dumps would recurse)."""
    return f"__NESTED_{depth}__"


def encode(message: Any) -> bytes:
    text = json.dumps(message)
    for depth in (10, 63, 70, 300, 1200, 5000):
        text = text.replace(f'"{nested(depth)}"', "[" * depth + "1" + "]" * depth)
    return text.encode() + b"\n"


def mutate(rng: random.Random, params: dict[str, Any]) -> Any:
    params = json.loads(json.dumps(params))
    choice = rng.randrange(9)
    keys = list(params)
    if choice == 0 and keys:
        params[rng.choice(keys)] = rng.choice(JUNK)
    elif choice == 1 and keys:
        del params[rng.choice(keys)]
    elif choice == 2:
        params[rng.choice(["extra", "sessionId", "cwd", "prompt"])] = rng.choice(JUNK)
    elif choice == 3:
        params["_meta"] = {rng.choice(["cwd", "session_id", "prompt", "value", "zed.dev/x"]): rng.choice(JUNK)}
    elif choice == 4 and keys:
        params[rng.choice(keys)] = nested(rng.choice([10, 63, 70, 300, 1200]))
    elif choice == 5:
        return rng.choice([None, [], "params", 5, [params]])
    elif choice == 6 and "prompt" in params:
        params["prompt"] = [rng.choice([{"type": "resource_link", "uri": "file:///tmp/\0x", "name": "x"},
                                        {"type": "image", "data": "!!!", "mimeType": "image/png"},
                                        {"type": "bogus"}, {"text": "no type"}, "text"])]
    return params


def malformed(rng: random.Random) -> bytes:
    return rng.choice([
        b"not json at all",
        b'{"jsonrpc": "2.0", "id": "m-1", "method": "initialize", "params": {',
        b"\xff\xfe\x00garbage",
        b"[]",
        b'[{"jsonrpc": "2.0", "id": "m-7", "method": "initialize"}]',
        b"{}",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "method": 42, "id": "m-3"}',
        encode({"jsonrpc": "2.0", "id": "m-9", "method": "session/list", "params": nested(5000)}).strip(),
        b"[" * 100_000,
        b"   ",
    ])


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("ACP_HERMES_FUZZ_SEEDS", "").split(",") if s] or SEEDS)
@pytest.mark.anyio
async def test_the_server_survives_a_seeded_fuzz_and_keeps_the_protocol(tmp_path: Path, seed: int) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "max_retries: 0\nrequest_timeout: 5\n")
    env = {"ANTHROPIC_API_KEY": "sk-ant-fuzz", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # nothing listens
    rng = random.Random(seed)
    expected: set[Any] = set()
    sent: dict[Any, bytes] = {}
    async with raw_agent(tmp_path, None, env=env, home=home) as agent:
        requests = valid_requests(str(tmp_path / "workspace"))
        methods = sorted(requests)
        for number in range(MESSAGES):
            if rng.random() < 0.2:
                await agent.write(malformed(rng) + b"\n")
                continue
            method = rng.choice(methods)
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": mutate(rng, requests[method])}
            if method != "session/cancel":
                message["id"] = rng.choice([number, f"id-{number}"])
                expected.add(message["id"])
                sent[message["id"]] = encode(message)
            await agent.write(encode(message))
        await agent.send({"jsonrpc": "2.0", "id": "probe", "method": "initialize",
                          "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        probe = await agent.wait_for(lambda: agent.response("probe"), timeout=30)
        assert probe["result"]["protocolVersion"] == 1  # still serving after all of that
        def unanswered() -> set[Any]:
            return expected - {m.get("id") for m in agent.messages if isinstance(m, dict) and "method" not in m}

        with anyio.move_on_after(30):
            while unanswered():
                await agent.arrivals.next()
        assert not unanswered(), [sent[i][:300] for i in sorted(unanswered(), key=str)][:5]

    assert None not in agent.messages, "a line on stdout was not JSON"
    responses = [m for m in agent.messages if "method" not in m]
    answered = [m["id"] for m in responses if m.get("id") in expected]
    assert sorted(map(str, answered)) == sorted(map(str, expected))  # each request answered exactly once
    internal = [m for m in responses if m.get("error", {}).get("code") == INTERNAL_ERROR]
    assert internal == [], [(m, sent.get(m["id"], b"")[:300]) for m in internal[:3]]
    assert agent.process.returncode == 0
