"""Command-line entry points: serve ACP over stdio (the default), setup, doctor, sessions, checkpoints, memory,
skills, hooks, demo."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from acp_hermes import __version__

if TYPE_CHECKING:
    import argparse
    from concurrent.futures import Future

    from acp_hermes.config import Settings
    from acp_hermes.config_base import Paths, StartingSettings
    from acp_hermes.core.runtime import Runtime
    from acp_hermes_memory.session_db import SessionDB

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
STDIO_LIMIT = 50 * 1024 * 1024
GC_AFTER_LOAD_SECONDS = 5.0  # the cyclic GC stays off this long after the SDK loaded, unless the warm-up ends first
# Said on stderr when stdin is a terminal. The server still serves (it reads JSON-RPC typed or pasted
# there, which is how some try it out), but a newcomer learns what it is and how to leave.
TERMINAL_HINT = ("acp-hermes: this is an Agent Client Protocol server: editors start it and talk JSON-RPC on "
                 "stdin/stdout. To try it from a terminal, run `acp-hermes demo`; for every command, "
                 "`acp-hermes --help`. Ctrl-D or Ctrl-C quits.")


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="acp-hermes",
        description="An Agent Client Protocol agent server: editors (Zed, JetBrains, Neovim, Emacs, Toad, VS Code) "
        "spawn it and talk ACP over stdio. With no command it serves ACP on stdin/stdout.",
    )
    version = f"acp-hermes {__version__}"
    parser.add_argument("--version", action="version", version=version)
    # The global flags, accepted before the command and after it (`acp-hermes demo --log-level DEBUG`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--version", action="version", version=version)
    common.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default=argparse.SUPPRESS,
                        help="log verbosity (stderr and $HERMES_HOME/acp-hermes/logs/); default from config")
    parser.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS,
                        help="log verbosity (stderr and $HERMES_HOME/acp-hermes/logs/); default from config")
    trust_help = ("serve: trust every workspace without asking, its project MCP servers included (headless use; "
                  "also ACP_HERMES_TRUST=1)")
    parser.add_argument("--trust", action="store_true", help=trust_help)
    commands = parser.add_subparsers(dest="command", metavar="command")
    serve_parser = commands.add_parser("serve", parents=[common], help="serve ACP over stdio (the default)")
    serve_parser.add_argument("--trust", action="store_true", default=argparse.SUPPRESS, help=trust_help)
    setup = commands.add_parser("setup", parents=[common],
                                help="interactively save an API key, base URL and model to the config file")
    setup.add_argument("--no-check", action="store_true",
                       help="save without checking the key against the endpoint (GET /v1/models)")
    doctor = commands.add_parser("doctor", parents=[common],
                                 help="show the effective configuration, where files live and what is wrong")
    doctor.add_argument("--repair", action="store_true",
                        help="repair the session database: rebuild a search index that is out of step, or move a "
                        "damaged file aside (kept) and start a fresh one with every session it can still read")
    from acp_hermes.app import checkpoints_cli, hooks_cli, memory_cli, sessions, skills_cli, trust_cli

    sessions.add_commands(commands, common)
    trust_cli.add_commands(commands, common)
    checkpoints_cli.add_commands(commands, common)
    memory_cli.add_commands(commands, common)
    skills_cli.add_commands(commands, common)
    hooks_cli.add_commands(commands, common)
    demo = commands.add_parser(
        "demo", parents=[common], help="run a prompt through the server the way an editor does, then chat",
        description="Run a prompt through the server the way an editor does, then keep talking in the same session: "
        "type prompts and slash commands (/help, /rollback, /budget; /steer and /queue while a turn runs); Ctrl-C "
        "cancels a running turn, Ctrl-D quits. With input from a pipe, its lines are sent one at a time and the "
        "demo ends with them.")
    demo.add_argument("prompt", nargs="?", help="the first prompt (a default demo task when omitted)")
    demo.add_argument("--once", action="store_true", help="run the one prompt and exit: no chat after it")
    demo.add_argument("--yes", action="store_true", help="approve every permission request")
    demo.add_argument("--cwd", help="workspace directory (default: a fresh sample project in a temp dir)")
    demo.add_argument("--offline", action="store_true",
                      help="use the built-in scripted demo model even when an API key is set")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        if not arguments:  # how editors start us: skip argparse, a few ms of start-up
            return serve(None)
        status = _run(build_parser().parse_args(arguments))
        sys.stdout.flush()  # here, where a reader that left (`| head`) is caught, not in the exit's flush
        return status
    except KeyboardInterrupt:  # Ctrl-C: the exit status says it all, a traceback would add nothing
        return _interrupted()
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # a known cause is one line that says what to do; a bug keeps its traceback
        if _only_broken_pipes(exc):  # the reader left while the demo's tasks were writing
            return _reader_gone()
        line = failure_line(exc)
        if line is None:
            raise
        import logging

        logging.getLogger("acp_hermes").debug("%s", line, exc_info=True)  # the details, for --log-level DEBUG
        print(line, file=sys.stderr)
        return 1


def _only_broken_pipes(error: BaseException) -> bool:
    """Whether ``error`` is a group of tasks' errors (anyio's, the demo's) that are all a closed stdout."""
    inner = getattr(error, "exceptions", None)  # an exception group, built in or backported
    if not isinstance(inner, tuple) or not inner:
        return isinstance(error, BrokenPipeError)
    return all(_only_broken_pipes(each) for each in inner)


def failure_line(error: BaseException) -> str | None:
    """One line for a failure whose cause the user can fix (a damaged state.db, a file where a
    directory belongs, a file that cannot be read, the server's answer to the demo), or None."""
    import sqlite3

    from acp_hermes.config import ConfigError, home_problem, paths_from_env
    from acp_hermes.core.errors import damaged_database
    from acp_hermes_memory.session_db import SessionDBCorrupt, is_corruption

    paths = paths_from_env()
    if isinstance(error, SessionDBCorrupt):
        return damaged_database(error.path, error.detail)
    if isinstance(error, sqlite3.DatabaseError):
        if is_corruption(error):
            return damaged_database(paths.state_db, str(error))
        return f"acp-hermes: the session database {paths.state_db} cannot be used: {error}"
    if isinstance(error, ConfigError):
        return f"acp-hermes: configuration error: {error}"
    if isinstance(error, OSError):
        where = f": {error.filename}" if error.filename else ""
        return f"acp-hermes: {home_problem(paths) or f'{error.strerror or error}{where}'}"
    if "acp" in sys.modules:  # only then can it be an answer of the server the demo drives
        from acp_hermes.adapter.errors import describe_request_error

        answer = describe_request_error(error)
        if answer is not None:
            return f"acp-hermes: the server refused: {answer}"
    return None


def _interrupted() -> NoReturn:
    """Exit with status 130 once the ``finally`` blocks have run, without waiting for threads: one
    blocked reading the terminal (the demo's permission prompt) would hold the process until Enter."""
    import contextlib
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a closed pipe has nothing left to say
            stream.flush()
    os._exit(130)


def _reader_gone() -> int:
    """stdout's reader has gone (``acp-hermes sessions list | head -1``): the rest of the output has no
    one to read it, so stop quietly with the status of a process ended by SIGPIPE (128 + 13), and point
    stdout at /dev/null so the flush at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def _run(args: argparse.Namespace) -> int:
    if args.command in (None, "serve"):
        return serve(args.log_level, trust=args.trust)
    if args.command != "doctor":  # doctor names it among what else it finds
        from acp_hermes.config import home_problem, paths_from_env

        problem = home_problem(paths_from_env())
        if problem is not None:
            print(f"acp-hermes: {problem}", file=sys.stderr)
            return 1
    _log_for_command(args.log_level, console=args.command != "demo")
    if args.command == "setup":
        from acp_hermes.app.setup import run_setup

        return run_setup(check=not args.no_check)
    if args.command == "doctor":
        from acp_hermes.app.doctor import run_doctor

        return run_doctor(repair=args.repair)
    if args.command == "sessions":
        from acp_hermes.app.sessions import run_sessions

        return run_sessions(args)
    if args.command == "checkpoints":
        from acp_hermes.app.checkpoints_cli import run_checkpoints

        return run_checkpoints(args)
    if args.command == "memory":
        from acp_hermes.app.memory_cli import run_memory

        return run_memory(args)
    if args.command == "skills":
        from acp_hermes.app.skills_cli import run_skills

        return run_skills(args)
    if args.command == "trust":
        from acp_hermes.app.trust_cli import run_trust

        return run_trust(args)
    if args.command == "hooks":
        from acp_hermes.app.hooks_cli import run_hooks_command

        return run_hooks_command(args)
    from acp_hermes.app.demo import run_demo

    return run_demo(prompt=args.prompt, approve_all=args.yes, cwd=args.cwd, offline=args.offline,
                    log_level=args.log_level, once=args.once)


def _log_for_command(level: str | None, *, console: bool) -> None:
    """A command logs (and routes Python warnings) to the log file; to stderr too when --log-level asks.

    The demo's server, not the demo, writes to the terminal at the level asked for.
    """
    from acp_hermes.app.logs import configure_logging
    from acp_hermes.config import paths_from_env

    configure_logging(paths_from_env(), level or "INFO", console=console and level is not None)


def serve(log_level: str | None, *, trust: bool = False) -> int:
    """Serve ACP on stdin/stdout until the editor closes stdin; ``trust`` (or ``ACP_HERMES_TRUST=1``):
    every workspace is trusted without a question (headless use)."""
    import gc

    # What start-up builds (mostly the ACP SDK's models) lives as long as the process: the cyclic
    # GC has nothing to find in it, yet its collections during the imports cost ~40 ms.
    gc.disable()
    import logging
    import threading

    from acp_hermes.adapter.wire import claim_stdout
    from acp_hermes.app.logs import configure_logging
    from acp_hermes.config_base import early_settings, home_problem, paths_from_env, trust_from_env
    from acp_hermes.core.arrival import Arrival

    protocol_fd = claim_stdout()
    if sys.stdin is not None and sys.stdin.isatty():  # a person, not an editor: editors always give a pipe
        print(TERMINAL_HINT, file=sys.stderr, flush=True)
    paths = paths_from_env()
    # Known without pydantic when the environment and a plain config file set them (config_base): the
    # settings are then validated on the loading thread, after session/new is answered.
    early = early_settings(os.environ, paths)
    validated = _validated_settings(paths) if early is None else None
    starting: StartingSettings = early or _usable(validated)
    configure_logging(paths, log_level or starting.log_level)
    log = logging.getLogger("acp_hermes")
    problem = home_problem(paths) or (validated[1] if validated else None)  # an unusable HERMES_HOME first
    if problem:
        log.error("configuration error: %s", problem)
    log.info("acp-hermes %s serving ACP on stdio (pid %d, HERMES_HOME=%s)", __version__, os.getpid(), paths.home)
    everything = trust or trust_from_env()
    arrival = Arrival(paths, starting, problem, _open_state_db_early(paths), _probe_sandbox_early(starting),
                      trust_everything=everything)

    import asyncio

    from acp_hermes.adapter.reception import serve_stdio

    def build() -> tuple[Runtime, str | None]:  # on the loading thread, once the SDK is imported
        from acp_hermes.core.runtime import Runtime

        settings, error = validated or _validated_settings(paths)
        if early is not None and error is not None:  # the file changed since start-up
            log.error("configuration error: %s", error)
        runtime = Runtime(_usable((settings, error)), paths, db_opening=arrival.db_opening,
                          sandbox_probe=arrival.sandbox_probe, trust_everything=everything, warmed=collect_from_now_on)
        return runtime, problem or error

    def loaded() -> None:  # the ACP SDK and the handlers are imported (on a thread, while serving)
        gc.freeze()
        # The model SDK's import (~1,000 modules) comes next, for the first prompt: without collections
        # during it the first chunk comes ~40 ms of CPU sooner. A server that opens no session collects
        # after a few seconds all the same.
        fallback = threading.Timer(GC_AFTER_LOAD_SECONDS, collect_from_now_on)
        fallback.daemon = True
        fallback.start()

    try:
        # Not anyio.run: anyio's primitives work the same in asyncio's own loop, and its asyncio
        # backend (~17 ms of imports) then loads after session/new instead of before initialize.
        serving = serve_stdio(arrival, build, protocol_fd, STDIO_LIMIT, loaded)
        signalled = asyncio.run(_serve_until_signalled(serving))
    except KeyboardInterrupt:
        return 130
    if signalled is not None:
        log.info("%s received; exiting", signal.Signals(signalled).name)
        return 128 + signalled  # what a shell reports for a process that signal ended
    log.info("stdin closed; exiting")
    return 0


def collect_from_now_on() -> None:
    """Turn the cyclic GC on, once start-up has loaded the model SDK too (or it is not coming soon):
    what is loaded by then is frozen first, so later collections need not walk it. Only the first call
    does it (each session's warm-up and the fallback timer call it): freezing again would make garbage
    waiting for its collection permanent."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _validated_settings(paths: Paths) -> tuple[Settings | None, str | None]:
    """The settings, validated (pydantic), or None and why they cannot be used."""
    from acp_hermes.config import ConfigError, load_settings

    try:
        return load_settings(paths=paths), None
    except ConfigError as exc:
        return None, str(exc)


def _usable(validated: tuple[Settings | None, str | None] | None) -> Settings:
    """The validated settings, or the defaults when they could not be used (session/new then says why)."""
    from acp_hermes.config import Settings

    settings = validated[0] if validated else None
    return settings if settings is not None else Settings()


async def _serve_until_signalled(serving: Coroutine[Any, Any, None]) -> int | None:
    """Serve until stdin closes (None) or SIGTERM/SIGHUP asks us to stop (its number).

    A signal ends the server the way a closed stdin does: the sessions close (their background
    commands stop, their private temp directories go), the turns store what they have, the stores
    close; the exit then removes what else this process made in the temp directory. A second signal
    does not wait for that.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(serving)
    received: list[int] = []

    def stop(signum: int) -> None:
        if received:  # asked twice: stop now, tidy only the temp directory
            from acp_hermes_tools.temp_dirs import remove_owned

            remove_owned()
            os._exit(128 + signum)
        received.append(signum)
        task.cancel()  # serve_stdio's shutdown then closes the sessions, as after the end of stdin

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)
    try:
        await task
    except asyncio.CancelledError:
        if not received:
            raise
    return received[0] if received else None


def _open_state_db_early(paths: Paths) -> Future[SessionDB]:
    """Open state.db on a thread while the ACP SDK is imported, and tidy up after killed writers and servers.

    Opening may wait on the disk (creating the schema in a new HERMES_HOME, syncing the WAL);
    that wait overlaps the ~0.5 s of imports instead of delaying session/new. ``Runtime.db``
    takes the result, or the error (and then tries again itself). Temp files an interrupted
    atomic write left behind in our directories go too, and so do the temp directories of servers that
    were killed (``tools.temp_dirs``).
    """
    import logging

    from acp_hermes_memory.threads import on_thread

    def open_db() -> SessionDB:
        from acp_hermes_memory.fs import remove_stale_temp_files
        from acp_hermes_memory.session_db import SessionDB
        from acp_hermes_tools.temp_dirs import remove_dead_owners

        for folder in remove_dead_owners():  # first, so whoever has the database finds them gone
            logging.getLogger("acp_hermes").info("removed %s: the process that made it is gone", folder)
        for directory in (paths.own, paths.memories):  # first: a session finds the directory tidy
            remove_stale_temp_files(directory)
        return SessionDB(paths.state_db)

    return on_thread("state.db open", open_db)  # what it raised is handed to whoever needs the database


def _probe_sandbox_early(settings: StartingSettings) -> Future[None]:
    """Try the OS sandbox on a thread while the ACP SDK is imported.

    Whether ``bypass`` is offered is part of the ``session/new`` answer, and it depends on whether
    bubblewrap can start here (tens of milliseconds): begun now, the answer is there long before.
    ``Runtime.sandbox`` takes it (``tools.sandbox.detect`` keeps it for the process).
    """
    from acp_hermes_memory.threads import on_thread

    def probe() -> None:
        from acp_hermes_tools.sandbox import detect

        if settings.sandbox != "off":
            detect()

    return on_thread("sandbox probe", probe)  # a failure is tried again where it is needed


if __name__ == "__main__":
    sys.exit(main())
