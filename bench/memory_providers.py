"""What an external memory provider costs a turn, when it works, hangs or raises, through the real stdio server.

    .venv/bin/python bench/memory_providers.py             # 20 turns each
    .venv/bin/python bench/memory_providers.py --runs 40

The real server (``python -m acp_hermes`` through tests/support/acp_harness.py, as an editor) against
the scripted model, in a fresh ``HERMES_HOME`` for each configuration: no provider; the example
provider (tests/support/plugins/notebook, 200 notes); one whose every method sleeps 60 s (it hangs);
one whose every method raises. Each turn is one prompt answered with one line; measured from the
prompt's send to its answer. The first turn of each is a warm-up and is not counted (with the hanging
provider it is the turn that waits out the 300 ms budget; later turns do not ask a provider whose
call is still running).

Targets: with a provider that hangs or raises, every turn completes and is at most 300 ms slower (p50)
than with none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from stats import percentile  # noqa: E402  (bench/ is on sys.path: the script runs from it)

from tests.support import acp_harness  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, text_reply  # noqa: E402

RUNS = 20
TARGET_MS = 300.0
METHODS = ("initialize", "system_prompt_block", "prefetch", "queue_prefetch", "sync_turn", "get_tool_schemas",
           "on_turn_start", "on_session_end", "shutdown")


def install(home: Path, kind: str) -> None:
    plugins = home / "plugins"
    if kind == "notebook":
        shutil.copytree(ROOT / "tests" / "support" / "plugins" / "notebook", plugins / "notebook")
        notes = [f"note {n}: the service {n} runs on port {8000 + n}" for n in range(200)]
        (home / "notebook.json").write_text(json.dumps(notes), encoding="utf-8")
    elif kind != "none":
        action = "time.sleep(60)" if kind == "hanging" else "raise RuntimeError('down')"
        methods = "".join(f"    def {name}(self, *args, **kwargs):\n        {action}\n\n" for name in METHODS)
        (plugins / kind).mkdir(parents=True)
        (plugins / kind / "__init__.py").write_text(
            "import time\nfrom acp_hermes_memory.providers import MemoryProvider\n\n\n"
            f"class Provider(MemoryProvider):\n    name = {kind!r}\n\n{methods}", encoding="utf-8")
    provider = "" if kind == "none" else f"memory:\n  provider: {kind}\n"
    acp_harness.write_config(home, f"learning_loop: false\n{provider}")


async def turns(kind: str, runs: int) -> list[float]:
    """Milliseconds from each prompt's send to its answer."""
    timings: list[float] = []
    with tempfile.TemporaryDirectory(prefix=f"acp-hermes-mp-{kind}-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        install(root / "hermes-home", kind)
        fake.script(*(text_reply(f"answer {n}") for n in range(runs + 1)))
        fake.script_auxiliary(text_reply("Providers"))
        async with acp_harness.running_agent(root, fake) as agent:
            session_id = await agent.new_session()
            for number in range(runs + 1):
                began = time.perf_counter()
                stop = await agent.prompt(session_id, f"which port does service {number} use?")
                if stop != "end_turn":
                    raise RuntimeError(f"{kind}: turn {number} ended with {stop!r}")
                if number:
                    timings.append((time.perf_counter() - began) * 1000)
    return timings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--runs", type=int, default=RUNS, help=f"measured turns per configuration (default {RUNS})")
    args = parser.parse_args(argv)
    results = {kind: anyio.run(turns, kind, args.runs) for kind in ("none", "notebook", "hanging", "raising")}
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    base = statistics.median(results["none"])
    print(f"turn time with an external memory provider, {args.runs} turns each (load {load})")
    ok = True
    for kind, timings in results.items():
        p50, p90 = statistics.median(timings), percentile(timings, 0.9)
        print(f"  {kind:<9} p50 {p50:7.1f} ms  p90 {p90:7.1f} ms  ({p50 - base:+.1f} ms p50 against none)")
        if kind in ("hanging", "raising"):
            ok = ok and p50 - base <= TARGET_MS
    print(f"target: every turn completes, hanging/raising ≤ {TARGET_MS:g} ms slower: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
