"""``acp-hermes demo``: run a prompt through the server exactly as an editor does.

It spawns ``acp-hermes`` over stdio and drives it with the terminal client of the ACP adapter
(``adapter.terminal_client``). Without an API key it runs against the built-in offline demo
model in a throwaway sample project.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

from acp_hermes.adapter.terminal_client import BOLD, DIM, YELLOW, DemoClient, TerminalView, drive
from acp_hermes.config import ConfigError, load_settings


def _server_env(home: str | None, base_url: str | None, api_key: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if home:
        env["HERMES_HOME"] = home
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if api_key:
        env["ANTHROPIC_API_KEY"] = api_key
    env.setdefault("ACP_HERMES_LOG_LEVEL", "WARNING")
    return env


def run_demo(*, prompt: str | None, approve_all: bool, cwd: str | None, offline: bool, log_level: str | None) -> int:
    from acp_hermes.testing.demo_model import DEFAULT_PROMPT, start_demo_model, write_sample_project

    try:
        settings = load_settings()
        has_key = settings.has_api_key
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        has_key = False
    offline = offline or not has_key
    view = TerminalView(color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)
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
            env = _server_env(str(Path(scratch, "hermes-home")), server.base_url, "offline-demo-key")
            text = prompt or DEFAULT_PROMPT
        else:
            server = None
            workspace = workspace or Path.cwd()
            env = _server_env(None, None, None)
            text = prompt or "Give me a short overview of this project: what it is and how it is laid out."
        view.workspace = workspace.resolve()
        client = DemoClient(view, approve_all=approve_all, interactive=interactive, sandbox=offline and cwd is None)
        try:
            stop = anyio.run(drive, view, client, text, workspace, env, log_level)
        finally:
            if server is not None:
                server.close()
    return 0 if stop in ("end_turn", "max_tokens") else 1
