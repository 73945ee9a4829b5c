"""What an MCP server is: how to reach it and how long to wait for it.

Servers come from three places with one shape here: the editor (ACP's ``mcpServers``, converted by
the adapter), ``mcp_servers`` in acp-hermes's own config, which has Hermes's shape, and a trusted
project (``.mcp.json``, the shape Claude Code, Cursor and VS Code read, and ``mcp_servers`` in its
``.hermes/config.yaml``), whose servers each start only once approved by their ``fingerprint``::

    mcp_servers:
      github:
        command: npx
        args: ["-y", "@modelcontextprotocol/server-github"]
        env: {GITHUB_TOKEN: "..."}
      docs:
        url: https://example.com/mcp
        headers: {Authorization: "Bearer ..."}
        transport: http          # or sse
        timeout: 120             # seconds a tool call may take
        connect_timeout: 30      # seconds to start and list tools
        enabled: true

    .mcp.json:  {"mcpServers": {"docs": {"command": "npx", "args": [...], "env": {...}},
                                "api": {"type": "http", "url": "https://...", "headers": {...}}}}
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
Source = Literal["editor", "config", "project"]

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 30.0
NAME_LIMIT = 64  # the Messages API's rule for a tool name: ^[a-zA-Z0-9_-]{1,64}$
SUFFIX_DIGITS = 8  # hex digits of the stable suffix that tells apart names that would be the same
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    source: Source = "config"

    @property
    def target(self) -> str:
        """Where it runs, for people: the command line or the URL (never headers or env values)."""
        return " ".join((self.command, *self.args)) if self.transport == "stdio" else self.url


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server``: ``mcp__<server>__<tool>``, every run of characters
    the API does not allow in a name replaced by ``_``.

    A name longer than the API's 64 characters is cut and ends in the stable suffix of ``suffixed_name``
    instead, so two long names that share their first characters still differ.
    """
    name = _joined(server, tool)
    return name if len(name) <= NAME_LIMIT else suffixed_name(server, tool)


def suffixed_name(server: str, tool: str) -> str:
    """``tool_name`` made distinct: cut to leave room, then ``_`` and 8 hex digits of a hash of the
    server's and the tool's own names (the same every time, so the name is stable across sessions).

    For a tool whose ``tool_name`` another tool has already taken (``a.b`` and ``a_b`` of one server,
    or the tools of servers ``x.y`` and ``x_y``); see ``tools.mcp.servers``.
    """
    raw = f"{server}\0{tool}".encode("utf-8", "surrogatepass")  # names from JSON may hold lone surrogates
    digest = hashlib.sha256(raw).hexdigest()[:SUFFIX_DIGITS]
    return f"{_joined(server, tool)[:NAME_LIMIT - SUFFIX_DIGITS - 1]}_{digest}"


def _joined(server: str, tool: str) -> str:
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"


def merged(configured: Iterable[McpServerSpec], from_editor: Iterable[McpServerSpec]) -> list[McpServerSpec]:
    """Both lists by name; the editor's server wins a name the config also uses."""
    servers = {spec.name: spec for spec in configured}
    servers.update((spec.name, spec) for spec in from_editor)
    return list(servers.values())


def parse_configured(raw: Mapping[str, Any], source: Source = "config",
                     label: str = "mcp_servers") -> tuple[list[McpServerSpec], list[str]]:
    """The enabled servers of a config's ``mcp_servers`` (``label`` names it in problems) and one
    problem line per entry that is unusable."""
    specs: list[McpServerSpec] = []
    problems: list[str] = []
    for name, entry in raw.items():
        try:
            spec = _parse_entry(str(name), entry)
        except ValueError as problem:
            problems.append(f"{label}.{name}: {problem}")
            continue
        if spec is not None:
            specs.append(spec if source == "config" else replace(spec, source=source))
    return specs, problems


def parse_mcp_json(document: Any) -> tuple[list[McpServerSpec], list[str]]:
    """A project's ``.mcp.json`` (``{"mcpServers": {name: {command, args, env} | {type, url, headers}}}``)
    as project servers, and one problem line per entry that is unusable."""
    servers = document.get("mcpServers") if isinstance(document, Mapping) else None
    if not isinstance(servers, Mapping):
        return [], [".mcp.json: expected an object with `mcpServers`"]
    entries: dict[str, Any] = {}
    for name, entry in servers.items():
        if isinstance(entry, Mapping) and entry.get("type") in ("http", "sse"):
            entry = {**{key: item for key, item in entry.items() if key != "type"}, "transport": entry["type"]}
        elif isinstance(entry, Mapping) and "type" in entry:
            entry = {key: item for key, item in entry.items() if key != "type"}
        entries[str(name)] = entry
    return parse_configured(entries, "project", ".mcp.json mcpServers")


def fingerprint(spec: McpServerSpec) -> str:
    """What approving a project server approves: its exact command line, URL, environment, headers and
    folder (a changed one is a new server that asks again), never its name."""
    exact = {"transport": spec.transport, "command": spec.command, "args": list(spec.args), "env": dict(spec.env),
             "cwd": spec.cwd, "url": spec.url, "headers": dict(spec.headers)}
    return hashlib.sha256(json.dumps(exact, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()


def _parse_entry(name: str, entry: Any) -> McpServerSpec | None:
    if not re.search(r"[A-Za-z0-9]", name):
        raise ValueError("a server needs a name with letters or digits")
    if not isinstance(entry, Mapping):
        raise ValueError("expected a mapping with `command` (stdio) or `url` (http/sse)")
    if entry.get("enabled", True) is False:
        return None
    call_timeout = _seconds(entry, "timeout", DEFAULT_CALL_TIMEOUT)
    connect_timeout = _seconds(entry, "connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    if "command" in entry:
        command = entry["command"]
        if not isinstance(command, str) or not command.strip():
            raise ValueError("`command` must be a non-empty string")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("`cwd` must be a string")
        return McpServerSpec(name, "stdio", command=command, args=_strings(entry, "args"), env=_mapping(entry, "env"),
                             cwd=cwd, call_timeout=call_timeout, connect_timeout=connect_timeout)
    url = entry.get("url")
    if not isinstance(url, str) or not re.match(r"https?://[^/\s]+", url):
        raise ValueError("expected `command` (stdio) or an http(s) `url`")
    transport = entry.get("transport", "http")
    if transport not in ("http", "sse"):
        raise ValueError(f"`transport` must be http or sse, not {transport!r}")
    return McpServerSpec(name, transport, url=url, headers=_mapping(entry, "headers"), call_timeout=call_timeout,
                         connect_timeout=connect_timeout)


def _seconds(entry: Mapping[str, Any], key: str, default: float) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"`{key}` must be a positive number of seconds")
    return float(value)


def _strings(entry: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, (str, int, float)) for item in value):
        raise ValueError(f"`{key}` must be a list of strings")
    return tuple(str(item) for item in value)


def _mapping(entry: Mapping[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, Mapping):
        raise ValueError(f"`{key}` must be a mapping of names to values")
    return {str(name): str(item) for name, item in value.items()}
