"""``acp-hermes demo``: run a prompt through the server exactly as an editor does.

It spawns ``acp-hermes`` over stdio and drives it with the terminal client of the ACP adapter
(``adapter.terminal_client``).

- Offline (no API key, or ``--offline``): the built-in scripted model on 127.0.0.1, a throwaway
  sample project (unless ``--cwd``) and a throwaway ``HERMES_HOME``: nothing of the run stays,
  and the user's own ``HERMES_HOME`` (sessions, memory, skills, grants, logs) is not touched.
- With a key: the configured model in the current folder (or ``--cwd``), in the user's
  ``HERMES_HOME``: a real session, stored with its title, that an editor can load. The endpoint
  is checked first (``GET /v1/models``): a wrong base URL or a rejected key ends the demo with
  one line saying so and status 1, as does a turn the model could not complete; so the demo
  doubles as a check of the key and base URL. So does an invalid configuration: which model and key
  to use are unknown then (``--offline`` names it and runs all the same: it does not use it).

Ctrl-C ends it quietly (status 130) on a fresh line; the server stores what the turn had so far.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from acp_hermes.adapter.terminal_client import BOLD, DIM, PLAN_MARKS, YELLOW, DemoClient, TerminalView, drive
from acp_hermes.config import ENV_MODEL, ConfigError, Paths, Settings, load_settings

OFFLINE_MODEL = "offline-demo"  # no price: the scripted model costs nothing
TITLE_WAIT_SECONDS = 30.0  # the server names a session within ~20 s of its first turn (core.titles)
MODEL_FAILURE_MARK = "\n\n⚠️ "  # how the agent loop ends a turn the model could not complete (core.loop)


class DemoView(TerminalView):
    """The terminal view with the plan shown once: a later update names only the steps whose
    status changed, and the plan tool's result, the same list again, is left out."""

    def __init__(self, color: bool) -> None:
        super().__init__(color)
        self._plan: dict[str, str] | None = None  # step → status, as last shown
        self._open: set[str] = set()  # tool calls announced and not finished
        self._planners: set[str] = set()  # calls during which the plan changed: their output is the plan
        self.failure: str | None = None  # why the model could not go on, when that is how the turn ended

    def show(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = update["content"].get("text", "")
            self.failure = text.strip().removeprefix("⚠️").strip() if text.startswith(MODEL_FAILURE_MARK) else None
        elif kind in ("agent_thought_chunk", "tool_call"):
            self.failure = None
        if kind == "plan":
            self._show_plan(update)
            return
        if kind == "tool_call":
            self._open.add(update["toolCallId"])
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self._open.discard(update["toolCallId"])
            if update["toolCallId"] in self._planners and update["status"] == "completed":
                update = {key: value for key, value in update.items() if key != "content"}
        super().show(update)

    def _show_plan(self, update: dict[str, Any]) -> None:
        self._planners |= self._open
        steps = {entry["content"]: entry["status"] for entry in update["entries"]}
        if self._plan is None:
            super().show(update)
        else:
            for step, status in steps.items():
                if self._plan.get(step) != status:
                    self.line(self.paint(f"plan: {PLAN_MARKS.get(status, '[ ]')} {step}", BOLD))
        self._plan = steps


def _server_env(home: str | None, base_url: str | None, api_key: str | None, model: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if home:
        env["HERMES_HOME"] = home
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if api_key:
        env["ANTHROPIC_API_KEY"] = api_key
    if model:
        env[ENV_MODEL] = model
    env.setdefault("ACP_HERMES_LOG_LEVEL", "WARNING")
    return env


def run_demo(*, prompt: str | None, approve_all: bool, cwd: str | None, offline: bool, log_level: str | None) -> int:
    try:
        return _run(prompt=prompt, approve_all=approve_all, cwd=cwd, offline=offline, log_level=log_level)
    except KeyboardInterrupt:
        # The terminal echoed ^C where the cursor was: what the shell prints next starts a line of its own.
        for stream in (sys.stdout, sys.stderr):
            if stream.isatty():
                with contextlib.suppress(OSError):
                    stream.write("\n")
                    stream.flush()
                break
        raise


def _run(*, prompt: str | None, approve_all: bool, cwd: str | None, offline: bool, log_level: str | None) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        if not offline:  # which model, which key: unknown, so neither demo is the one asked for
            print(f"acp-hermes demo: configuration error: {exc} (fix it, or run `acp-hermes demo --offline`)",
                  file=sys.stderr)
            return 1
        # The scripted model in a throwaway HERMES_HOME does not use it; still worth knowing.
        print(f"acp-hermes demo: configuration error (the offline demo does not use it): {exc}", file=sys.stderr)
        return _offline(prompt=prompt, approve_all=approve_all, cwd=cwd, log_level=log_level)
    if offline or not settings.has_api_key:
        return _offline(prompt=prompt, approve_all=approve_all, cwd=cwd, log_level=log_level)
    return _with_model(settings, prompt=prompt, approve_all=approve_all, cwd=cwd, log_level=log_level)


def _offline(*, prompt: str | None, approve_all: bool, cwd: str | None, log_level: str | None) -> int:
    """The scripted model, in a HERMES_HOME made for this run and removed with it."""
    from acp_hermes.testing.demo_model import DEFAULT_PROMPT, start_demo_model, write_sample_project

    view = _view()
    with tempfile.TemporaryDirectory(prefix="acp-hermes-demo-") as scratch:
        home = Path(scratch, "hermes-home")
        view.line(view.paint("OFFLINE DEMO — a scripted model on 127.0.0.1, not a real LLM "
                             "(set ANTHROPIC_API_KEY or run `acp-hermes setup` for the real thing)", YELLOW, BOLD))
        if cwd:
            workspace = Path(cwd).resolve()
        else:
            workspace = Path(scratch, "project")
            workspace.mkdir()
            write_sample_project(workspace)
        view.line(view.paint(f"workspace: {workspace}", DIM))
        view.workspace = workspace.resolve()
        env = _server_env(str(home), None, "offline-demo-key", OFFLINE_MODEL)
        client = DemoClient(view, approve_all=approve_all, interactive=sys.stdin.isatty(), sandbox=cwd is None)
        with _logging_in(Paths(home), log_level), contextlib.closing(start_demo_model()) as server:
            env["ANTHROPIC_BASE_URL"] = server.base_url
            stop = anyio.run(drive, view, client, prompt or DEFAULT_PROMPT, workspace, env, log_level)
    return _status(view, stop)


def _with_model(settings: Settings, *, prompt: str | None, approve_all: bool, cwd: str | None,
                log_level: str | None) -> int:
    """The configured model in a real folder: a session stored in the user's SessionDB, with its title."""
    from acp_hermes.app.setup import access_problem

    problem = anyio.run(lambda: access_problem(settings, models_optional=True))
    if problem is not None:
        print(f"acp-hermes demo: {problem}", file=sys.stderr)
        return 1
    view = _view()
    workspace = Path(cwd).resolve() if cwd else Path.cwd()
    view.workspace = workspace
    text = prompt or "Give me a short overview of this project: what it is and how it is laid out."
    client = DemoClient(view, approve_all=approve_all, interactive=sys.stdin.isatty(), sandbox=False)
    stop = anyio.run(lambda: drive(view, client, text, workspace, _server_env(None, None, None, None), log_level,
                                   title_wait=TITLE_WAIT_SECONDS))
    return _status(view, stop)


def _view() -> DemoView:
    return DemoView(color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)


def _status(view: DemoView, stop: str) -> int:
    if view.failure is not None:
        print(f"acp-hermes demo: the model could not answer: {view.failure}", file=sys.stderr)
        return 1
    return 0 if stop in ("end_turn", "max_tokens") else 1


@contextlib.contextmanager
def _logging_in(paths: Paths, level: str | None) -> Iterator[None]:
    """This process's own log lines go to the throwaway HERMES_HOME (they are about it), then nowhere."""
    from acp_hermes.app.logs import configure_logging

    configure_logging(paths, level or "INFO", console=False)
    try:
        yield
    finally:  # its log file is gone with it: a later record must not make the folders again
        for logger in (logging.getLogger(), logging.getLogger("py.warnings")):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
                handler.close()
            logger.addHandler(logging.NullHandler())
