"""What ``initialize`` and ``session/new`` answer, built by one set of functions.

Two callers build these answers: the handlers (``adapter.server``) and the reception
(``adapter.reception``), which answers the first requests before the ACP SDK is loaded. Both call
the functions here, so the two answers are the same bytes. Nothing here imports the SDK.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_hermes import __version__
from acp_hermes.adapter import extensions, rewind, steering, timeline
from acp_hermes.adapter.mcp_servers import MCP_CAPABILITIES
from acp_hermes.adapter.options import choices_state
from acp_hermes.config_base import StartingSettings
from acp_hermes.core.choices import SessionChoices
from acp_hermes.core.errors import InvalidInput
from acp_hermes_memory.values import value

AUTH_METHOD_KEY = "anthropic-api-key"
AUTH_METHOD_SETUP = "acp-hermes-setup"


@value
class Answered:
    """A request the reception answered before the handlers existed, and its answer; for a
    ``session/new``, the id and choices the client was given."""

    method: str
    params: Any
    result: dict[str, Any]
    session: tuple[str, SessionChoices] | None = None


def auth_methods(terminal_auth: bool) -> list[dict[str, Any]]:
    """How a user gives the agent a key; the terminal method only to a client that runs one."""
    methods: list[dict[str, Any]] = [
        {
            "id": AUTH_METHOD_KEY,
            "name": "Anthropic API key",
            "description": "Set ANTHROPIC_API_KEY in the agent's environment, or run `acp-hermes setup` "
            "in a terminal to save a key, then authenticate.",
            "_meta": {"terminal-auth": {"command": sys.executable, "args": ["-m", "acp_hermes", "setup"],
                                        "label": "acp-hermes setup"}},
        }
    ]
    if terminal_auth:
        methods.append(
            {
                "id": AUTH_METHOD_SETUP,
                "name": "Set up acp-hermes",
                "description": "Enter an Anthropic API key, base URL and model in a terminal.",
                "type": "terminal",
                "args": ["setup"],
            }
        )
    return methods


def initialize_result(terminal_auth: bool) -> dict[str, Any]:
    """The answer to ``initialize``: it depends on the client only through ``auth.terminal``."""
    return {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": MCP_CAPABILITIES,
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "additionalDirectories": {},
                # unstable in ACP v1; served with the SDK's unstable routes enabled; at a message and the
                # rewind: drafts on ACP's track (adapter.timeline)
                "fork": timeline.FORK_CAPABILITY,
                "rewind": timeline.REWIND_CAPABILITY,
            },
            "_meta": {"acp-hermes": {"promptQueueing": True}, **rewind.CAPABILITY, **steering.CAPABILITY,
                      **extensions.QUOTAS_CAPABILITY},
        },
        # Where claude-agent-acp and codex-acp advertise steering, and AIR reads the agent's extensions.
        "_meta": {**steering.CAPABILITY, **extensions.AIR_META},
        "authMethods": auth_methods(terminal_auth),
        "agentInfo": {"name": "acp-hermes", "title": "acp-hermes (Hermes Agent for editors)",
                      "version": __version__},
    }


def new_session_result(session_id: str, choices: SessionChoices, settings: StartingSettings) -> dict[str, Any]:
    """The answer to ``session/new``: the id, the modes and the options the session starts with."""
    return {"sessionId": session_id, **choices_state(choices, settings)}


def workspace(cwd: str, additional: list[str] | None) -> tuple[Path, tuple[Path, ...]]:
    """A session's workspace roots, resolved; each must be an absolute path to a directory."""
    paths = []
    fields = ["cwd", *(f"additionalDirectories[{n}]" for n in range(len(additional or [])))]
    for field, raw in zip(fields, (cwd, *(additional or [])), strict=True):
        no_nul(raw, field)
        if not raw or not Path(raw).is_absolute():
            raise InvalidInput(f"{field}: workspace paths must be absolute, got {raw!r}")
        path = Path(raw).resolve()
        if not path.is_dir():
            raise InvalidInput(f"workspace directory {raw!r} does not exist")
        paths.append(path)
    return paths[0], tuple(paths[1:])


def no_nul(value: str, field: str) -> None:
    """Paths and URIs never hold a NUL byte; one that does is refused naming the field."""
    if "\0" in value:
        raise InvalidInput(f"{field}: contains a NUL byte")
