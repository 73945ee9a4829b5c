"""``acp-hermes demo``: run a prompt through the server exactly as an editor does.

It spawns ``acp-hermes`` over stdio and drives it with the terminal client of the ACP adapter
(``adapter.terminal_client``). Without an API key it runs against the built-in offline demo
model in a throwaway sample project; the session is stored like any other (``acp-hermes
sessions list``), under a model name that has no price, so no cost is shown for it.
Ctrl-C ends it quietly (status 130): the server stores what the turn had so far.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from acp_hermes.adapter.terminal_client import BOLD, DIM, PLAN_MARKS, YELLOW, DemoClient, TerminalView, drive
from acp_hermes.config import ENV_MODEL, ConfigError, load_settings

OFFLINE_MODEL = "offline-demo"  # no price: the scripted model costs nothing


class DemoView(TerminalView):
    """The terminal view with the plan shown once: a later update names only the steps whose
    status changed, and the plan tool's result, the same list again, is left out."""

    def __init__(self, color: bool) -> None:
        super().__init__(color)
        self._plan: dict[str, str] | None = None  # step → status, as last shown
        self._open: set[str] = set()  # tool calls announced and not finished
        self._planners: set[str] = set()  # calls during which the plan changed: their output is the plan

    def show(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
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
    from acp_hermes.testing.demo_model import DEFAULT_PROMPT, start_demo_model, write_sample_project

    try:
        settings = load_settings()
        has_key, config_ok = settings.has_api_key, True
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        has_key = config_ok = False
    offline = offline or not has_key
    view = DemoView(color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    interactive = sys.stdin.isatty()
    with tempfile.TemporaryDirectory(prefix="acp-hermes-demo-") as scratch:
        workspace = Path(cwd).resolve() if cwd else None
        if offline:
            view.line(view.paint("OFFLINE DEMO — a scripted model on 127.0.0.1, not a real LLM "
                                 "(set ANTHROPIC_API_KEY or run `acp-hermes setup` for the real thing)", YELLOW, BOLD))
            if workspace is None:
                workspace = Path(scratch, "project")
                workspace.mkdir()
                write_sample_project(workspace)
            view.line(view.paint(f"workspace: {workspace}", DIM))
            server = start_demo_model()
            # The user's HERMES_HOME keeps the session, unless its config would stop the server.
            home = None if config_ok else str(Path(scratch, "hermes-home"))
            env = _server_env(home, server.base_url, "offline-demo-key", OFFLINE_MODEL)
            text = prompt or DEFAULT_PROMPT
        else:
            server = None
            workspace = workspace or Path.cwd()
            env = _server_env(None, None, None, None)
            text = prompt or "Give me a short overview of this project: what it is and how it is laid out."
        view.workspace = workspace.resolve()
        client = DemoClient(view, approve_all=approve_all, interactive=interactive, sandbox=offline and cwd is None)
        try:
            stop = anyio.run(drive, view, client, text, workspace, env, log_level)
        finally:
            if server is not None:
                server.close()
    return 0 if stop in ("end_turn", "max_tokens") else 1
