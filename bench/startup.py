"""Cold start-up of acp-hermes against the floor of a bare agent on the same ACP SDK.

    .venv/bin/python bench/startup.py                 # 15 runs of each, side by side
    .venv/bin/python bench/startup.py --runs 30
    .venv/bin/python bench/startup.py --importtime    # what is imported before each response
    .venv/bin/python bench/startup.py --baseline "/path/to/main/.venv/bin/acp-hermes"   # before/after, paired

Each run spawns the server the way an editor does: the ``acp-hermes`` console script of the
venv, stdin/stdout pipes, NDJSON, an API key in the environment (so ``session/new`` succeeds), the
HERMES_HOME of a returning user (one per build, kept across its starts and used first by an
unmeasured start: its state.db, and what the model SDK's import read, ``import-index.json``; with
``--fresh-home`` each start gets a new, empty one, as on the first start after installing) and a
fresh workspace (empty, or with ``--agents-md`` an AGENTS.md, trusted with ``ACP_HERMES_TRUST=1`` so
it loads as it did before workspace trust; or with ``--tree N`` N folders of plain files: nothing
trust gates, which the first prompt looks for before its model request).
It sends ``initialize`` at once and ``session/new`` as soon as that is answered, and measures
spawn → each response; the CPU the agent had used when ``session/new`` was answered (all its
threads, and its main thread alone: acp-hermes imports the ACP SDK on another thread meanwhile);
and the peak RSS (VmHWM of the Python interpreter's own process) once the server is loaded: the
floor's right after ``session/new``, acp-hermes's in a start of its own that sends ``session/list``
after ``session/new`` (answered through the SDK, so once it has loaded). The floor is
``bench/bare_agent.py`` (``acp.run_agent`` answering only those two methods), spawned with the
venv's interpreter; runs alternate between the two so drift on the machine hits both alike.

acp-hermes then gets two prompts against a scripted model on loopback (``ScriptedModelServer``),
the first sent the moment ``session/new`` has answered: its time to the first streamed chunk
includes finishing the background imports (the ACP SDK, then the model SDK), and the CPU the agent
used from the ``session/new`` answer to that chunk, and from spawn to it, is read too: the
threads share one GIL, so that is what the wait is made of; the second prompt shows the steady
state. ``--server`` runs all this against another build (another checkout); ``--baseline`` adds
another build's starts, alternating with these, and prints this build's figures as ratios to its,
each run against the baseline's run beside it (the steadiest comparison on a busy machine).

Targets: spawn → session/new ≤ 150 ms (median); peak RSS ≤ 1.5 × floor; first prompt → first
chunk ≤ 600 ms (median).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acp_hermes.testing.scripted_model import MessageReply, ModelRequest, ScriptedModelServer, TextBlock

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"
SERVER_COMMAND = (str(VENV_BIN / "acp-hermes"),)
FLOOR_COMMAND = (str(VENV_BIN / "python"), str(ROOT / "bench" / "bare_agent.py"))
EDITOR_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG")
API_KEY = "sk-ant-bench-not-a-real-key"
RESPONSE_TIMEOUT = 60.0
READ_SIZE = 1 << 20

TARGET_NEW_SESSION_MS = 150.0  # spawn → session/new answered
TARGET_RSS_RATIO = 1.5
TARGET_FIRST_CHUNK_MS = 600.0

SAMPLE_AGENTS_MD = "# Project notes for agents\n\n" + "\n".join(
    f"- Rule {n}: run `make test` before committing; keep modules small; document why, not what." for n in range(60)
)
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
FIRST_REPLY = "Hello from the scripted model: start-up benchmark reply."


# ----------------------------------------------------------------------------------------------------
# Talking NDJSON to a spawned agent (also used by bench/replay.py and bench/chunk_overhead.py)


@dataclass(frozen=True)
class Line:
    """One message from the agent and the moment (perf_counter_ns) its line was read."""

    at_ns: int
    message: dict[str, Any]


class AgentProcess:
    """An ACP agent on pipes, driven by hand: raw JSON-RPC, every line timestamped on arrival.

    A reader thread drains stdout in big reads and timestamps each line as soon as it is read, so
    neither a slow client nor the main thread's own work (parsing, bookkeeping) holds the agent
    back or delays a measurement.
    """

    def __init__(self, command: Sequence[str], env: dict[str, str], cwd: Path,
                 stderr: IO[bytes] | int = subprocess.DEVNULL) -> None:
        self.spawned_ns = time.perf_counter_ns()
        self.process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd
        )
        self._lines: queue.Queue[tuple[int, bytes]] = queue.Queue()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, name="agent-stdout", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        partial = b""
        while chunk := os.read(fd, READ_SIZE):
            at_ns = time.perf_counter_ns()
            lines = chunk.split(b"\n")
            lines[0] = partial + lines[0]
            partial = lines.pop()
            for line in lines:
                if line:
                    self._lines.put((at_ns, line))
        self._lines.put((time.perf_counter_ns(), b""))

    def send(self, method: str, params: dict[str, Any]) -> int:
        """Write one request; returns its id."""
        request_id = self._next_id
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        stdin.flush()
        return request_id

    def next_raw(self, timeout: float = RESPONSE_TIMEOUT) -> tuple[int, bytes]:
        """The next line as it arrived (arrival time, bytes), for callers that parse later."""
        try:
            at_ns, raw = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message from the agent within {timeout:.0f} s") from None
        if not raw:
            raise EOFError(f"the agent closed stdout (exit code {self.process.poll()})")
        return at_ns, raw

    def next_line(self, timeout: float = RESPONSE_TIMEOUT) -> Line:
        at_ns, raw = self.next_raw(timeout)
        return Line(at_ns, json.loads(raw))

    def until(self, done: Callable[[dict[str, Any]], bool]) -> Line:
        """Read until a message satisfies ``done``, skipping the others."""
        while True:
            line = self.next_line()
            if done(line.message):
                return line

    def response(self, request_id: int) -> Line:
        """The response to ``request_id``; an error response raises."""

        def is_response(message: dict[str, Any]) -> bool:
            return message.get("id") == request_id and "method" not in message

        line = self.until(is_response)
        if "error" in line.message:
            raise RuntimeError(f"request {request_id} failed: {line.message['error']}")
        return line

    def request(self, method: str, params: dict[str, Any]) -> Line:
        return self.response(self.send(method, params))

    def close(self) -> int:
        """Close stdin (how an editor says goodbye) and wait for the exit; kill if it hangs."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def add_server_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=shlex.join(SERVER_COMMAND),
                        help="the command that starts acp-hermes, e.g. another checkout's (default: this venv's)")


def editor_env(hermes_home: Path, base_url: str | None = None) -> dict[str, str]:
    """What an editor passes: a trimmed environment plus the agent's own settings."""
    env = {key: os.environ[key] for key in EDITOR_ENV_KEYS if key in os.environ}
    env["HERMES_HOME"] = str(hermes_home)
    env["ANTHROPIC_API_KEY"] = API_KEY
    if base_url is not None:
        env["ANTHROPIC_BASE_URL"] = base_url
    return env


def plant_tree(workspace: Path, folders: int) -> None:
    """``folders`` folders up to three deep, a plain file in each: a project that carries nothing trust gates."""
    if folders:
        (workspace / ".git").mkdir()  # its own repository root, as a checkout is
    for number in range(folders):
        folder = workspace / f"pkg{number % 20}" / f"mod{number // 20 % 20}" / f"part{number}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "code.py").write_text("print('plain')\n", encoding="utf-8")


@contextmanager
def scratch_dirs(kept_home: Path | None = None) -> Iterator[tuple[Path, Path]]:
    """A HERMES_HOME (``kept_home``, else a fresh one) and a fresh workspace; what is fresh is removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="acp-hermes-bench-"))
    try:
        home, workspace = kept_home or root / "hermes-home", root / "workspace"
        home.mkdir(exist_ok=True)
        workspace.mkdir()
        yield home, workspace
    finally:
        shutil.rmtree(root, ignore_errors=True)


def initialize_params() -> dict[str, Any]:
    return {
        "protocolVersion": 1,
        "clientCapabilities": CLIENT_CAPABILITIES,
        "clientInfo": {"name": "acp-hermes-bench", "version": "0"},
    }


# ----------------------------------------------------------------------------------------------------
# Memory of the interpreter process


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def interpreter_pid(pid: int) -> int:
    """The Python interpreter serving ACP: ``pid`` itself, or the first Python below a launcher."""
    pending = [pid]
    while pending:
        candidate = pending.pop(0)
        if Path(_exe(candidate)).name.startswith("python"):
            return candidate
        pending.extend(_children(candidate))
    raise RuntimeError(f"no Python interpreter in process {pid} or its children ({_exe(pid)})")


def cpu_ns(pid: int) -> int:
    """CPU time the whole process has used so far, threads that already ended included.

    Waiting for a CPU on a busy machine does not count, so this is steadier than wall time. Read
    through the process's CPU clock, whose id Linux derives from the pid (as glibc's
    clock_getcpuclockid does): ``(~pid << 3) | CPUCLOCK_SCHED``.
    """
    clock = ((~pid << 3) | 2) & 0xFFFFFFFF
    return time.clock_gettime_ns(clock - (1 << 32) if clock >= 1 << 31 else clock)


def main_thread_cpu_ns(pid: int) -> int:
    """CPU time the process's main thread (whose id is the pid) has used so far (its schedstat)."""
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])


def peak_rss_kb(pid: int) -> int:
    """VmHWM: the most resident memory the process has had so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


# ----------------------------------------------------------------------------------------------------
# One cold start


@dataclass
class StartRun:
    initialize_ms: float  # spawn → initialize answered
    new_session_ms: float  # spawn → session/new answered
    new_session_cpu_ms: float  # CPU the agent had used then (all threads)
    new_session_main_cpu_ms: float  # the same, its main thread alone
    interpreter: str
    peak_rss_kb: int | None = None  # VmHWM once loaded (see the module's docstring)
    first_chunk_ms: float | None = None  # first session/prompt sent → its first agent_message_chunk
    first_chunk_cpu_ms: float | None = None  # CPU the agent used from the session/new answer to that chunk
    first_chunk_total_cpu_ms: float | None = None  # CPU the agent used from spawn to that chunk
    next_chunk_ms: float | None = None  # the same for the second prompt, everything loaded by then
    settled_rss_kb: int | None = None  # VmHWM after the prompts (model SDK loaded)


def _ms(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6


def _is_text_chunk(message: dict[str, Any]) -> bool:
    update = (message.get("params") or {}).get("update") or {}
    return message.get("method") == "session/update" and update.get("sessionUpdate") == "agent_message_chunk"


def cold_start(command: Sequence[str], *, model_url: str | None = None, stderr: IO[bytes] | int = subprocess.DEVNULL,
               on_phase: Callable[[str], None] | None = None, agents_md: bool = False,
               loaded_probe: bool = False, tree: int = 0, home: Path | None = None) -> StartRun:
    """Spawn ``command``, initialize, open a session; with ``model_url`` also run two prompts; with
    ``loaded_probe`` also ask ``session/list`` and read the peak RSS once it is answered. The
    HERMES_HOME is ``home`` when given, else a new one."""
    with scratch_dirs(home) as (home, workspace):
        env = editor_env(home, model_url)
        if agents_md:
            (workspace / "AGENTS.md").write_text(SAMPLE_AGENTS_MD, encoding="utf-8")
            env["ACP_HERMES_TRUST"] = "1"  # loaded as before workspace trust (a build without trust ignores it)
        plant_tree(workspace, tree)
        agent = AgentProcess(command, env, workspace, stderr)
        try:
            init = agent.request("initialize", initialize_params())
            if on_phase:
                on_phase("initialize")
            new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
            python = interpreter_pid(agent.pid)
            new_cpu_ns, new_main_cpu_ns = cpu_ns(python), main_thread_cpu_ns(python)
            if on_phase:
                on_phase("session/new")
            run = StartRun(
                initialize_ms=_ms(agent.spawned_ns, init.at_ns),
                new_session_ms=_ms(agent.spawned_ns, new.at_ns),
                new_session_cpu_ms=new_cpu_ns / 1e6,
                new_session_main_cpu_ms=new_main_cpu_ns / 1e6,
                interpreter=_exe(python),
            )
            if loaded_probe:
                agent.request("session/list", {})
                run.peak_rss_kb = peak_rss_kb(python)
            elif model_url is None:
                run.peak_rss_kb = peak_rss_kb(python)
            if model_url is not None:
                session_id = new.message["result"]["sessionId"]
                run.first_chunk_ms, chunk_cpu_ns = time_to_first_chunk(agent, session_id, python)
                run.first_chunk_cpu_ms = (chunk_cpu_ns - new_cpu_ns) / 1e6
                run.first_chunk_total_cpu_ms = chunk_cpu_ns / 1e6
                run.next_chunk_ms, _ = time_to_first_chunk(agent, session_id, python)
                run.settled_rss_kb = peak_rss_kb(python)
            return run
        finally:
            code = agent.close()
            if code != 0:
                raise RuntimeError(f"{command[-1]} exited with {code}")


def time_to_first_chunk(agent: AgentProcess, session_id: str, python: int) -> tuple[float, int]:
    """Send a prompt; milliseconds until its first streamed text chunk, and the agent's CPU clock
    (``python``'s, ns) read as soon as that chunk is out of the queue. Waits for the turn to end."""
    sent_ns = time.perf_counter_ns()
    prompt_id = agent.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "Hi."}]})
    first = agent.until(_is_text_chunk)
    at_chunk_cpu_ns = cpu_ns(python)
    done = agent.response(prompt_id)
    if done.message["result"].get("stopReason") != "end_turn":
        raise RuntimeError(f"unexpected prompt result {done.message}")
    return _ms(sent_ns, first.at_ns), at_chunk_cpu_ns


def scripted_reply(request: ModelRequest) -> MessageReply:
    """Every model call (the turn and the background title) gets a short streamed answer."""
    return MessageReply([TextBlock(FIRST_REPLY, chunks=4)])


# ----------------------------------------------------------------------------------------------------
# Reporting


@dataclass
class Series:
    values: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def describe(self, digits: int = 1) -> str:
        return f"{self.median:.{digits}f} [{min(self.values):.{digits}f}–{max(self.values):.{digits}f}]"


def _series(runs: list[StartRun], pick: Callable[[StartRun], float | None]) -> Series:
    return Series([value for run in runs if (value := pick(run)) is not None])


def _paired(floor: list[StartRun], hermes: list[StartRun], pick: Callable[[StartRun], float]) -> float:
    """The median of the per-run ratios, each acp-hermes start against the floor start just before it."""
    return statistics.median(pick(h) / pick(f) for f, h in zip(floor, hermes, strict=True))


def report(floor: list[StartRun], hermes: list[StartRun], loaded: list[StartRun]) -> bool:
    """Print the comparison; True when every target holds. ``loaded``: acp-hermes's RSS probes."""
    init_f, init_h = _series(floor, lambda r: r.initialize_ms), _series(hermes, lambda r: r.initialize_ms)
    new_f, new_h = _series(floor, lambda r: r.new_session_ms), _series(hermes, lambda r: r.new_session_ms)
    cpu_f, cpu_h = _series(floor, lambda r: r.new_session_cpu_ms), _series(hermes, lambda r: r.new_session_cpu_ms)
    main_f = _series(floor, lambda r: r.new_session_main_cpu_ms)
    main_h = _series(hermes, lambda r: r.new_session_main_cpu_ms)
    rss_f = _series(floor, lambda r: None if r.peak_rss_kb is None else r.peak_rss_kb / 1024)
    rss_h = _series(loaded, lambda r: None if r.peak_rss_kb is None else r.peak_rss_kb / 1024)
    rss_ratio = rss_h.median / rss_f.median
    checks = [new_h.median <= TARGET_NEW_SESSION_MS, rss_ratio <= TARGET_RSS_RATIO]
    verdict = ["ok" if ok else "MISSED" for ok in checks]
    print(f"\nmedian [min–max] of {len(hermes)} cold starts each; interpreter {hermes[0].interpreter}")
    print(f"{'':34}{'floor (bare SDK)':>22}{'acp-hermes':>22}{'ratio':>8}   target")
    print(f"{'spawn → initialize (ms)':34}{init_f.describe(0):>22}{init_h.describe(0):>22}"
          f"{init_h.median / init_f.median:>8.2f}")
    print(f"{'spawn → session/new (ms)':34}{new_f.describe(0):>22}{new_h.describe(0):>22}"
          f"{new_h.median / new_f.median:>8.2f}   ≤ {TARGET_NEW_SESSION_MS:.0f} ms: {verdict[0]}")
    print(f"{'  paired: median of run ratios':34}{'':>22}{'':>22}"
          f"{_paired(floor, hermes, lambda r: r.new_session_ms):>8.2f}   (each start against the floor's before it)")
    print(f"{'  CPU by then, all threads (ms)':34}{cpu_f.describe(0):>22}{cpu_h.describe(0):>22}"
          f"{cpu_h.median / cpu_f.median:>8.2f}   (less sensitive to a busy machine)")
    main_paired = _paired(floor, hermes, lambda r: r.new_session_main_cpu_ms)
    print(f"{'  CPU by then, main thread (ms)':34}{main_f.describe(0):>22}{main_h.describe(0):>22}"
          f"{main_h.median / main_f.median:>8.2f}   (paired {main_paired:.2f})")
    print(f"{'peak RSS, loaded (MB)':34}{rss_f.describe():>22}{rss_h.describe():>22}{rss_ratio:>8.2f}"
          f"   ≤ {TARGET_RSS_RATIO} × floor: {verdict[1]}")
    chunk = _series(hermes, lambda r: r.first_chunk_ms)
    if chunk.values:
        later = _series(hermes, lambda r: r.next_chunk_ms)
        settled = _series(hermes, lambda r: None if r.settled_rss_kb is None else r.settled_rss_kb / 1024)
        chunk_cpu = _series(hermes, lambda r: r.first_chunk_cpu_ms)
        total_cpu = _series(hermes, lambda r: r.first_chunk_total_cpu_ms)
        checks.append(chunk.median <= TARGET_FIRST_CHUNK_MS)
        print("\nprompts against a scripted model on loopback:")
        print(f"{'  first, sent at once: → chunk (ms)':34}{'':>22}{chunk.describe(0):>22}{'':>8}   "
              f"≤ {TARGET_FIRST_CHUNK_MS:.0f} ms: {'ok' if checks[-1] else 'MISSED'} (waits for the imports)")
        print(f"{'    CPU from session/new (ms)':34}{'':>22}{chunk_cpu.describe(0):>22}{'':>8}   (all threads)")
        print(f"{'    CPU from spawn (ms)':34}{'':>22}{total_cpu.describe(0):>22}{'':>8}   (all threads)")
        print(f"{'  second prompt → first chunk (ms)':34}{'':>22}{later.describe(1):>22}")
        print(f"{'  peak RSS after them (MB)':34}{'':>22}{settled.describe():>22}{settled.median / rss_f.median:>8.2f}")
    return all(checks)


BASELINE_FIGURES: tuple[tuple[str, Callable[[StartRun], float | None]], ...] = (
    ("spawn → session/new (ms)", lambda r: r.new_session_ms),
    ("  CPU by then, all threads (ms)", lambda r: r.new_session_cpu_ms),
    ("  CPU by then, main thread (ms)", lambda r: r.new_session_main_cpu_ms),
    ("first prompt → first chunk (ms)", lambda r: r.first_chunk_ms),
    ("  CPU from session/new (ms)", lambda r: r.first_chunk_cpu_ms),
    ("  CPU from spawn (ms)", lambda r: r.first_chunk_total_cpu_ms),
    ("second prompt → first chunk (ms)", lambda r: r.next_chunk_ms),
    ("peak RSS after the prompts (MB)", lambda r: None if r.settled_rss_kb is None else r.settled_rss_kb / 1024),
)


def report_against(baseline: list[StartRun], hermes: list[StartRun], command: str) -> None:
    """This build's figures against another's started alternately with it: medians and paired ratios."""
    print(f"\nagainst the baseline ({command}), {len(hermes)} starts each, alternating:")
    print(f"{'':34}{'baseline':>22}{'this build':>22}{'paired':>8}")
    for label, pick in BASELINE_FIGURES:
        pairs = [(b, h) for run_b, run_h in zip(baseline, hermes, strict=True)
                 if (b := pick(run_b)) is not None and (h := pick(run_h)) is not None]
        before, after = statistics.median(b for b, _ in pairs), statistics.median(h for _, h in pairs)
        ratio = statistics.median(h / b for b, h in pairs)
        print(f"{label:34}{before:>22.1f}{after:>22.1f}{ratio:>8.2f}")


# ----------------------------------------------------------------------------------------------------
# -X importtime: what each response waits for


@dataclass(frozen=True)
class Import:
    module: str
    self_us: int
    cumulative_us: int


def parse_importtime(text: str) -> list[Import]:
    found = []
    for line in text.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue
        found.append(Import(fields[2].strip(), int(fields[0]), int(fields[1])))
    return found


def importtime_phases(command: Sequence[str]) -> dict[str, list[Import]]:
    """Imports before the initialize response, and between it and the session/new response.

    stderr goes to a file and Python writes it line by line, so everything imported before a
    response was written is already in the file when the response arrives: its size then is
    the boundary (an import begun just after the response may slip in before it).
    """
    is_python = Path(command[0]).name.startswith("python")
    python, *script = command if is_python else (str(VENV_BIN / "python"), *command)
    with tempfile.TemporaryFile() as log:
        marks: dict[str, int] = {}

        def mark(phase: str) -> None:
            marks[phase] = os.fstat(log.fileno()).st_size

        cold_start((python, "-X", "importtime", *script), stderr=log, on_phase=mark)
        log.seek(0)
        data = log.read()
    return {
        "initialize": parse_importtime(data[: marks["initialize"]].decode("utf-8", "replace")),
        "session/new": parse_importtime(data[marks["initialize"] : marks["session/new"]].decode("utf-8", "replace")),
    }


def print_imports(title: str, imports: list[Import], top: int) -> None:
    total = sum(item.self_us for item in imports)
    print(f"\n{title}: {len(imports)} modules, {total / 1000:.1f} ms (self times, inflated by -X importtime)")
    for item in sorted(imports, key=lambda i: -i.self_us)[:top]:
        print(f"  {item.self_us / 1000:7.1f} ms  {item.module}")


def run_importtime(server: Sequence[str], top: int) -> None:
    floor = importtime_phases(FLOOR_COMMAND)
    hermes = importtime_phases(server)
    floor_modules = {item.module for phase in floor.values() for item in phase}
    extra = [item for item in hermes["initialize"] if item.module not in floor_modules]
    print_imports("floor: imported before its initialize response", floor["initialize"], 5)
    print_imports("acp-hermes: imported before the initialize response, beyond the floor", extra, top)
    print_imports("acp-hermes: imported between the initialize and session/new responses",
                  hermes["session/new"], top)


# ----------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="cold starts of each agent (default 15, at least 10)")
    parser.add_argument("--importtime", action="store_true", help="list what is imported before each response")
    parser.add_argument("--top", type=int, default=25, help="modules listed per phase with --importtime")
    parser.add_argument("--agents-md", action="store_true",
                        help="put a 5 KB AGENTS.md in each workspace (session/new then loads and scans it)")
    parser.add_argument("--tree", type=int, default=0, metavar="N",
                        help="fill each workspace with N folders of plain files (nothing that trust gates)")
    add_server_option(parser)
    parser.add_argument("--baseline", help="another build's command (e.g. main's checkout): its starts alternate "
                        "with these, and the figures are compared run by run")
    parser.add_argument("--fresh-home", action="store_true",
                        help="a new, empty HERMES_HOME for every start (the first start after installing)")
    args = parser.parse_args(argv)
    server = tuple(shlex.split(args.server))
    baseline_command = tuple(shlex.split(args.baseline)) if args.baseline else None
    if args.importtime:
        run_importtime(server, args.top)
        return 0
    if args.runs < 10:
        parser.error("--runs must be at least 10")
    kind: dict[str, Any] = {"agents_md": args.agents_md, "tree": args.tree}  # what each workspace holds
    with ScriptedModelServer(scripted_reply) as model, tempfile.TemporaryDirectory(prefix="acp-hermes-homes-") as homes:
        server_home = None if args.fresh_home else Path(homes) / "server"
        baseline_home = None if args.fresh_home else Path(homes) / "baseline"
        cold_start(FLOOR_COMMAND)  # one unmeasured start of each: page cache, .pyc files, the kept HERMES_HOME
        cold_start(server, model_url=model.base_url, home=server_home, **kind)
        if baseline_command is not None:
            cold_start(baseline_command, model_url=model.base_url, home=baseline_home, **kind)
        floor: list[StartRun] = []
        hermes: list[StartRun] = []
        loaded: list[StartRun] = []
        baseline: list[StartRun] = []
        for number in range(args.runs):
            floor.append(cold_start(FLOOR_COMMAND))
            if baseline_command is not None and number % 2:  # each goes first in every other run
                baseline.append(cold_start(baseline_command, model_url=model.base_url, home=baseline_home, **kind))
            hermes.append(cold_start(server, model_url=model.base_url, home=server_home, **kind))
            if baseline_command is not None and not number % 2:
                baseline.append(cold_start(baseline_command, model_url=model.base_url, home=baseline_home, **kind))
            loaded.append(cold_start(server, loaded_probe=True, home=server_home, **kind))
            print(f"\rrun {number + 1}/{args.runs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    met = report(floor, hermes, loaded)
    if baseline_command is not None:
        report_against(baseline, hermes, shlex.join(baseline_command))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
