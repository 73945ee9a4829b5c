"""What the OS sandbox adds to starting a command: target p50 and p99 ≤ 15 ms on Linux.

    .venv/bin/python bench/sandbox_overhead.py              # 200 runs of each, alternating
    .venv/bin/python bench/sandbox_overhead.py --runs 500

Method. The same command (``true``) is run through ``tools.local_io.LocalEditor.run_command`` (the
path every local command takes: a shell, output piping, the exit status) once unconfined and once
inside the session sandbox acp-hermes builds (bubblewrap, the same profile a session gets: a
workspace, a private TMPDIR, the credentials of a home directory hidden, no network), in
alternation so a busy spell on the machine hits both. The overhead is the sandboxed time minus the
unconfined time of each pair; its percentiles are reported with both series'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.contracts import CommandRequest  # noqa: E402
from tools.local_io import LocalEditor  # noqa: E402
from tools.sandbox import SessionSandbox, detect, hidden_paths  # noqa: E402

TARGET_MS = 15.0


class _Quiet:
    async def on_terminal(self, terminal_id: str) -> None: ...

    async def on_output(self, output: str) -> None: ...


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(runs: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as scratch:
        workspace, home = Path(scratch, "workspace"), Path(scratch, "home")
        for path in (workspace, home / ".ssh", home / ".aws"):
            path.mkdir(parents=True)
        sandbox = SessionSandbox(enabled=True, writable=(workspace,), hidden=hidden_paths(home, Path(scratch, "hh")),
                                 network_allowed=False, session_id="bench")
        confinement = sandbox.confinement(network=False)
        editor = LocalEditor(shell="/bin/sh")
        plain_request = CommandRequest("true", workspace, 30)
        confined_request = CommandRequest("true", workspace, 30, confinement=confinement)
        plain, confined = [], []
        for _ in range(10):  # warm the page cache and the interpreter's paths
            await editor.run_command(confined_request, _Quiet())
        for _ in range(runs):
            for request, series in ((plain_request, plain), (confined_request, confined)):
                started = time.perf_counter()
                outcome = await editor.run_command(request, _Quiet())
                series.append((time.perf_counter() - started) * 1000)
                if outcome.exit_code != 0:
                    raise RuntimeError(f"the command failed: {outcome.output}")
        return plain, confined


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    status = detect()
    if not status.available:
        print(f"no sandbox on this machine: {status.detail}")
        return 1
    plain, confined = anyio.run(measure, args.runs)
    overhead = [c - p for p, c in zip(plain, confined, strict=True)]
    print(f"{status.detail}; {args.runs} runs of each, alternating")
    print(f"{'':<22}{'p50':>9}{'p90':>9}{'p99':>9}{'mean':>9}  (ms)")
    for label, values in (("unconfined", plain), ("in the sandbox", confined), ("overhead per command", overhead)):
        row = [percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99), statistics.fmean(values)]
        print(f"{label:<22}" + "".join(f"{value:>9.2f}" for value in row))
    p50, p99 = percentile(overhead, 0.5), percentile(overhead, 0.99)
    met = p50 <= TARGET_MS and p99 <= TARGET_MS
    print(f"target: overhead p50 and p99 ≤ {TARGET_MS:g} ms: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
