"""``acp-hermes demo``: run a prompt through the server exactly as an editor does, then chat.

It spawns ``acp-hermes`` over stdio and drives it with the terminal client of the ACP adapter
(``adapter.terminal_client``). After the first prompt the session stays open for a chat
(``adapter.terminal_chat``): on a terminal, what the user types, slash commands, permission questions
and Ctrl-C included, until Ctrl-D; from a pipe, its lines until it ends (so a script, or CI with no
input, ends too). ``--once`` runs the one prompt and stops, as a script may want.

- Offline (no API key, or ``--offline``): the built-in scripted model on 127.0.0.1, a throwaway
  sample project (unless ``--cwd``) and a throwaway ``HERMES_HOME``: nothing of the run stays,
  and the user's own ``HERMES_HOME`` (sessions, memory, skills, grants, logs) is not touched.
- With a key: the configured model in the current folder (or ``--cwd``), in the user's
  ``HERMES_HOME``: a real session, stored with its title, that an editor can load. The endpoint
  is checked first (``GET /v1/models``): a wrong base URL or a rejected key ends the demo with
  one line saying so and status 1, as does a turn the model could not complete; so the demo
  doubles as a check of the key and base URL. So does an invalid configuration: which model and key
  to use are unknown then (``--offline`` names it and runs all the same: it does not use it).

In the chat on a terminal, Ctrl-C cancels the running turn; otherwise (``--once``, or input from a
pipe) Ctrl-C ends the demo quietly (status 130) on a fresh line, and the server stores what the turn
had so far.
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

from acp_hermes.adapter.terminal_chat import ChatEnd, converse
from acp_hermes.adapter.terminal_client import BOLD, DIM, PLAN_MARKS, YELLOW, DemoClient, TerminalView, drive
from acp_hermes.adapter.terminal_input import Keyboard
from acp_hermes.config import ENV_MODEL, ConfigError, Paths, Settings, load_settings

OFFLINE_MODEL = "offline-demo"  # no price: the scripted model costs nothing
TITLE_WAIT_SECONDS = 30.0  # the server names a session within ~20 s of its first turn (core.titles)
MODEL_FAILURE_MARK = "\n\n⚠️ "  # how the agent loop ends a turn the model could not complete (core.loop)
CHAT_KEYS = "Ctrl-C cancels a running turn, Ctrl-D quits"
CHAT_HINT = (f"Type a prompt or a command after `you>`: /help lists them; while a turn runs, /steer <words> sends "
             f"words into it and /queue <prompt> runs one after it. {CHAT_KEYS}.")


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


def run_demo(*, prompt: str | None, approve_all: bool, cwd: str | None, offline: bool, log_level: str | None,
             once: bool = False) -> int:
    run = _Run(approve_all=approve_all, once=once, log_level=log_level)
    try:
        return _run(run, prompt=prompt, cwd=cwd, offline=offline)
    except KeyboardInterrupt:
        # The terminal echoed ^C where the cursor was: what the shell prints next starts a line of its own.
        for stream in (sys.stdout, sys.stderr):
            if stream.isatty():
                with contextlib.suppress(OSError):
                    stream.write("\n")
                    stream.flush()
                break
        raise


class _Run:
    """How this run talks to the server: the one prompt (``--once``) or a chat after it."""

    def __init__(self, *, approve_all: bool, once: bool, log_level: str | None) -> None:
        self.approve_all = approve_all
        self.once = once
        self.log_level = log_level
        self.interactive = sys.stdin.isatty()

    def talk(self, view: DemoView, prompt: str, workspace: Path, env: dict[str, str], *, sandbox: bool, hint: str,
             title_wait: float = 0.0) -> int:
        """Run ``prompt`` (and the chat after it) in ``workspace``; the exit status."""
        keyboard = Keyboard()  # the chat's input; permission answers too, on a terminal
        client = DemoClient(view, approve_all=self.approve_all, keyboard=keyboard if self.interactive else None,
                            sandbox=sandbox)
        if self.once:
            stop = anyio.run(lambda: drive(view, client, prompt, workspace, env, self.log_level,
                                           title_wait=title_wait))
            return _status(view, stop)
        end = anyio.run(lambda: converse(view, client, keyboard, prompt, workspace, env, self.log_level,
                                         interactive=self.interactive, hint=hint,
                                         failed=lambda: view.failure is not None, title_wait=title_wait))
        return _chat_status(view, end)


def _run(run: _Run, *, prompt: str | None, cwd: str | None, offline: bool) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        if not offline:  # which model, which key: unknown, so neither demo is the one asked for
            print(f"acp-hermes demo: configuration error: {exc} (fix it, or run `acp-hermes demo --offline`)",
                  file=sys.stderr)
            return 1
        # The scripted model in a throwaway HERMES_HOME does not use it; still worth knowing.
        print(f"acp-hermes demo: configuration error (the offline demo does not use it): {exc}", file=sys.stderr)
        return _offline(run, prompt=prompt, cwd=cwd)
    if offline or not settings.has_api_key:
        return _offline(run, prompt=prompt, cwd=cwd)
    return _with_model(run, settings, prompt=prompt, cwd=cwd)


def _offline(run: _Run, *, prompt: str | None, cwd: str | None) -> int:
    """The scripted model, in a HERMES_HOME made for this run and removed with it."""
    from acp_hermes.testing.demo_model import CHAT_PROMPTS, DEFAULT_PROMPT, start_demo_model, write_sample_project

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
        hint = (f"Type after `you>`: the scripted model knows {CHAT_PROMPTS}; /help lists the commands (try "
                f"/rollback, /budget, /queue <prompt>, and /steer <words> while it counts). {CHAT_KEYS}.")
        with _logging_in(Paths(home), run.log_level), contextlib.closing(start_demo_model()) as server:
            env["ANTHROPIC_BASE_URL"] = server.base_url
            return run.talk(view, prompt or DEFAULT_PROMPT, workspace, env, sandbox=cwd is None, hint=hint)


def _with_model(run: _Run, settings: Settings, *, prompt: str | None, cwd: str | None) -> int:
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
    return run.talk(view, text, workspace, _server_env(None, None, None, None), sandbox=False, hint=CHAT_HINT,
                    title_wait=TITLE_WAIT_SECONDS)


def _view() -> DemoView:
    return DemoView(color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)


def _status(view: DemoView, stop: str) -> int:
    if view.failure is not None:
        print(f"acp-hermes demo: the model could not answer: {view.failure}", file=sys.stderr)
        return 1
    return 0 if stop in ("end_turn", "max_tokens") else 1


def _chat_status(view: DemoView, end: ChatEnd) -> int:
    """Ctrl-D or the end of input: 0; Ctrl-C at the prompt, twice: 130; a model that could not answer the
    first prompt: 1, with the reason."""
    if end == "failed":
        return _status(view, "end_turn")
    return 130 if end == "interrupted" else 0


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
