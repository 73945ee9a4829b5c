"""What the OS sandbox adds to starting a command: target p50 and p99 ≤ 15 ms on Linux.

    .venv/bin/python bench/sandbox_overhead.py              # 200 runs of each, alternating
    .venv/bin/python bench/sandbox_overhead.py --runs 500

Method. The same command (``true``) is run through ``tools.local_io.LocalEditor.run_command`` (the
path every local command takes: a shell, output piping, the exit status) once unconfined and once
the way a sandboxed tool call runs it (``ToolContext.run_command``): the look through the workspace
for what must stay read-only, bubblewrap with the session's profile (a workspace, a private TMPDIR,
the credentials of a home directory hidden, no network, no capabilities, the seccomp filter, the
environment allowlist, one read-only bind per protected entry), then the audit for anything a
command planted. The workspace is a repository with 10 nested repositories, an ``.envrc``, a
``.vscode`` and 2,000 source files in 200 folders. Runs alternate so a busy spell on the machine
hits both; they start once the workspace's folders are older than the scan's two-second grain
(a folder changed more recently than that is read again every time).

The start-up overhead — the target — is the look through the workspace plus the sandboxed run,
minus the unconfined run of the same pair: what a command waits before it runs. The audit comes
after the command has finished; its own target is p99 ≤ 5 ms. Percentiles of every series are
printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from acp_hermes_tools.contracts import CommandRequest  # noqa: E402
from acp_hermes_tools.local_io import LocalEditor  # noqa: E402
from acp_hermes_tools.sandbox import SessionSandbox, detect, hidden_paths  # noqa: E402

TARGET_MS = 15.0
AUDIT_TARGET_MS = 5.0
SETTLE_SECONDS = 2.5


class _Quiet:
    async def on_terminal(self, terminal_id: str) -> None: ...

    async def on_output(self, output: str) -> None: ...


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def make_workspace(workspace: Path) -> None:
    """A repository with 10 nested repositories, editor and direnv files, 2,000 source files."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for index in range(10):
        nested = workspace / "packages" / f"pkg{index}"
        nested.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(nested)], check=True)
    for index in range(200):
        folder = workspace / "src" / f"module{index // 20}" / f"part{index}"
        folder.mkdir(parents=True)
        for number in range(10):
            (folder / f"file{number}.py").write_text("x = 1\n")
    (workspace / ".envrc").write_text("export A=1\n")
    (workspace / ".vscode").mkdir()


async def measure(runs: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as scratch:
        workspace, home = Path(scratch, "workspace"), Path(scratch, "home")
        for path in (home / ".ssh", home / ".aws"):
            path.mkdir(parents=True)
        make_workspace(workspace)
        sandbox = SessionSandbox(enabled=True, writable=(workspace,), hidden=hidden_paths(home, Path(scratch, "hh")),
                                 network_allowed=False, session_id="bench", home=home,
                                 quarantine=Path(scratch, "quarantine"))
        editor = LocalEditor(shell="/bin/sh")
        plain_request = CommandRequest("true", workspace, 30)
        series: dict[str, list[float]] = {"unconfined": [], "scan + sandboxed run": [], "scan": [], "audit": []}

        async def confined() -> None:
            started = time.perf_counter()
            confinement = sandbox.confinement(network=False)
            scanned = time.perf_counter()
            outcome = await editor.run_command(replace(plain_request, confinement=confinement), _Quiet())
            ran = time.perf_counter()
            moved = sandbox.audit(confinement)
            done = time.perf_counter()
            if outcome.exit_code != 0 or moved:
                raise RuntimeError(f"the command failed: {outcome.output} {moved}")
            series["scan + sandboxed run"].append((ran - started) * 1000)
            series["scan"].append((scanned - started) * 1000)
            series["audit"].append((done - ran) * 1000)

        settled = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < settled:  # warm the page cache and let the new folders settle
            await confined()
        for key in series:
            series[key].clear()
        for _ in range(runs):
            started = time.perf_counter()
            await editor.run_command(plain_request, _Quiet())
            series["unconfined"].append((time.perf_counter() - started) * 1000)
            await confined()
        return series


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    status = detect()
    if not status.available:
        print(f"no sandbox on this machine: {status.detail}")
        return 1
    series = anyio.run(measure, args.runs)
    overhead = [c - p for p, c in zip(series["unconfined"], series["scan + sandboxed run"], strict=True)]
    print(f"{status.detail}; {args.runs} runs of each, alternating; 10 nested repositories")
    print(f"{'':<22}{'p50':>9}{'p90':>9}{'p99':>9}{'mean':>9}  (ms)")
    for label, values in (*series.items(), ("start-up overhead", overhead)):
        row = [percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99), statistics.fmean(values)]
        print(f"{label:<22}" + "".join(f"{value:>9.2f}" for value in row))
    p50, p99 = percentile(overhead, 0.5), percentile(overhead, 0.99)
    met = p50 <= TARGET_MS and p99 <= TARGET_MS
    audited = percentile(series["audit"], 0.99) <= AUDIT_TARGET_MS
    print(f"target: start-up overhead p50 and p99 ≤ {TARGET_MS:g} ms: {'met' if met else 'MISSED'}; "
          f"audit p99 ≤ {AUDIT_TARGET_MS:g} ms: {'met' if audited else 'MISSED'}")
    return 0 if met and audited else 1


if __name__ == "__main__":
    sys.exit(main())
